package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"parley/audit"
	"parley/store"
	"parley/views"
)

// Bounds of a project's ask settings.
const (
	maxExpiryDays       = 365
	maxMaxAskTimeoutSec = 86400
	minMaxAskTimeoutSec = 10
)

// handleAskSettingsSave stores how a project's asks wait and expire.
func (s *Server) handleAskSettingsSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f := views.AskSettingsForm{ExpiryDays: strings.TrimSpace(r.PostFormValue("expiry_days")),
			MaxAskTimeout: strings.TrimSpace(r.PostFormValue("max_ask_timeout"))}
		a, errs := parseAskSettings(f)
		if len(errs) > 0 {
			sv := s.settingsView(p, v, formOf(p))
			f.Errors = errs
			sv.Asks = f
			s.renderSettings(w, r, http.StatusBadRequest, sv)
			return
		}
		if err := s.st.SetAskSettings(r.Context(), p.ID, a); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.ProjectSettings, ProjectID: p.ID, Target: "asks", Detail: map[string]any{"asks": a}})
		s.expiry.Kick() // expiry times may have moved
		s.warm.Recheck()
		http.Redirect(w, r, settingsPath(p.ID)+"?saved=asks#asks", http.StatusSeeOther)
	})
}

// parseAskSettings checks the form; errs names each refused field.
func parseAskSettings(f views.AskSettingsForm) (store.AskSettings, map[string]string) {
	errs := map[string]string{}
	a := store.AskSettings{ExpiryDays: store.DefaultExpiryDays}
	if f.ExpiryDays != "" {
		n, err := strconv.Atoi(f.ExpiryDays)
		if err != nil || n < 1 || n > maxExpiryDays {
			errs["expiry_days"] = "A whole number of days from 1 to 365."
		}
		a.ExpiryDays = n
	}
	if f.MaxAskTimeout != "" {
		n, err := strconv.Atoi(f.MaxAskTimeout)
		if err != nil || n < minMaxAskTimeoutSec || n > maxMaxAskTimeoutSec {
			errs["max_ask_timeout"] = "A whole number of seconds from 10 to 86400, or empty for the project's ask timeout."
		}
		a.MaxAskTimeoutSeconds = n
	}
	return a, errs
}

// askSettingsForm shows a project's stored ask settings.
func (s *Server) askSettingsForm(ctx context.Context, projectID int64) (views.AskSettingsForm, error) {
	a, err := s.st.AskSettingsOf(ctx, projectID)
	if err != nil {
		return views.AskSettingsForm{}, err
	}
	f := views.AskSettingsForm{ExpiryDays: strconv.Itoa(a.ExpiryDays)}
	if a.MaxAskTimeoutSeconds > 0 {
		f.MaxAskTimeout = strconv.Itoa(a.MaxAskTimeoutSeconds)
	}
	return f, nil
}

// modeRefusal says why a project's permission mode cannot work, or "".
// Measured on claude 2.1.328: AskUserQuestion and ExitPlanMode reach Parley
// as can_use_tool in every mode (default, acceptEdits, plan and
// bypassPermissions), even when listed in --allowedTools, so no mode answers
// a question or a plan for the user. But the CLI refuses to start at all in
// bypassPermissions when it runs as root ("--dangerously-skip-permissions
// cannot be used with root/sudo privileges for security reasons") unless
// IS_SANDBOX=1 says the machine is a sandbox.
func modeRefusal(c store.ProjectSettings, euid int, getenv func(string) string) string {
	if c.PermissionMode == "bypassPermissions" && euid == 0 && getenv("IS_SANDBOX") != "1" {
		return "Claude refuses bypassPermissions when Parley runs as root. Run Parley as another user, or set IS_SANDBOX=1 for it if this machine is a throwaway sandbox."
	}
	return ""
}
