package views

import (
	"context"
	"strings"
	"testing"
)

// TestNotificationsPageStates: the notifications page says plainly when
// the server cannot push or mail, and offers the e-mail choice only when
// it can send; a device's name is escaped like any text.
func TestNotificationsPageStates(t *testing.T) {
	tests := []struct {
		name      string
		n         Notifications
		want, not []string
	}{
		{"no push keys", Notifications{MailReady: true, Email: "ann@example.com"},
			[]string{`id="push-nokeys"`, "not set up to send push notifications", "To ann@example.com"},
			[]string{`id="push-form"`, `disabled`}},
		{"push, no mail", Notifications{PushReady: true, EmailAsks: true},
			[]string{`id="push-form"`, `id="push-enable"`, "cannot send e-mail", `name="email_asks" value="on" disabled`},
			[]string{`id="push-nokeys"`, `checked`}},
		{"devices", Notifications{PushReady: true, MailReady: true, EmailAsks: true, QuietFrom: "22:00", QuietTo: "07:30", TZ: "Europe/Berlin",
			Devices: []NotificationDevice{{ID: 7, Name: "<b>Ann's phone</b>", Added: "2026-11-27", LastUsed: "2026-11-27 12:03", LastOutcome: "sent"}}},
			[]string{`id="device-7"`, "&lt;b&gt;Ann", "Last used 2026-11-27 12:03: sent.", `value="22:00"`, `value="Europe/Berlin"`, `checked`, `id="no-devices" class="help" hidden`},
			[]string{"<b>Ann"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			ctx := WithUser(context.Background(), User{ID: 1, Name: "Ann", CSRF: "tok"})
			if err := NotificationsPage(tt.n).Render(ctx, &b); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("the page has %q", n)
				}
			}
		})
	}
}
