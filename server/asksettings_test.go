package server

import (
	"strings"
	"testing"

	"parley/store"
	"parley/views"
)

func TestModeRefusal(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	tests := []struct {
		mode    string
		euid    int
		sandbox string
		refused bool
	}{
		{"bypassPermissions", 0, "", true},
		{"bypassPermissions", 0, "1", false},
		{"bypassPermissions", 1000, "", false},
		{"plan", 0, "", false},
		{"acceptEdits", 0, "", false},
	}
	for _, tt := range tests {
		msg := modeRefusal(store.ProjectSettings{PermissionMode: tt.mode}, tt.euid, env(tt.sandbox))
		if (msg != "") != tt.refused || (tt.refused && !strings.Contains(msg, "IS_SANDBOX=1")) {
			t.Errorf("modeRefusal(%s, euid %d, IS_SANDBOX=%q) = %q, want refused %v", tt.mode, tt.euid, tt.sandbox, msg, tt.refused)
		}
	}
}

func TestParseAskSettings(t *testing.T) {
	tests := []struct {
		f       views.AskSettingsForm
		want    store.AskSettings
		errKeys string
	}{
		{views.AskSettingsForm{}, store.AskSettings{ExpiryDays: 7}, ""},
		{views.AskSettingsForm{ExpiryDays: "3", MaxAskTimeout: "1800"}, store.AskSettings{ExpiryDays: 3, MaxAskTimeoutSeconds: 1800}, ""},
		{views.AskSettingsForm{ExpiryDays: "0", MaxAskTimeout: "5"}, store.AskSettings{}, "expiry_days max_ask_timeout"},
	}
	for _, tt := range tests {
		got, errs := parseAskSettings(tt.f)
		var keys []string
		for _, k := range []string{"expiry_days", "max_ask_timeout"} {
			if errs[k] != "" {
				keys = append(keys, k)
			}
		}
		if strings.Join(keys, " ") != tt.errKeys || (tt.errKeys == "" && got != tt.want) {
			t.Errorf("parseAskSettings(%+v) = %+v, %v; want %+v, errors on %q", tt.f, got, errs, tt.want, tt.errKeys)
		}
	}
}
