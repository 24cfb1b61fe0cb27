package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"parley/reach/slack"
	"parley/store"
	"parley/views"
)

// Bounds of a project's reach settings.
const (
	maxEscalateMinutes = 1440
	maxSlackField      = 200
	maxWebhookURL      = 2000
	slackCheckTimeout  = 10 * time.Second
)

// reachForm is the "Reaching people" form as typed: the secrets are only
// ever read from it, never shown back.
type reachForm struct {
	views.ReachSettingsForm
	named                   []string
	slackToken, slackSecret string
	disconnect, regenerate  bool
}

// handleReachSettingsSave stores how the project's asks reach people: an
// owner's (or an admin's) form. A Slack token is tried against Slack
// (auth.test) before it is kept; a webhook URL must be one Parley may
// post to (s.reach.Check).
func (s *Server) handleReachSettingsSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		old, err := s.st.ProjectReachOf(r.Context(), p.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f := readReachForm(r)
		pr, errs := s.parseReachSettings(r.Context(), p.ID, old, f)
		if len(errs) > 0 {
			sv := s.settingsView(p, v, formOf(p))
			view := s.reachView(p.ID, old)
			view.FirstReach, view.Named, view.EscalateAfter = f.FirstReach, f.Named, f.EscalateAfter
			view.SlackChannel, view.WebhookURL, view.Errors = f.SlackChannel, f.WebhookURL, errs
			sv.Reach = &view
			s.renderSettings(w, r, http.StatusBadRequest, sv)
			return
		}
		if err := s.st.SetProjectReach(r.Context(), p.ID, pr); err != nil {
			s.fail(w, r, err)
			return
		}
		s.pokeReach()
		if pr.WebhookSecret != "" && pr.WebhookSecret != old.WebhookSecret {
			// A new secret is shown once, in the answer to this POST: never
			// in a URL or a log, and a reload does not show it again.
			view := s.reachView(p.ID, pr)
			view.Saved, view.NewWebhookSecret = true, pr.WebhookSecret
			sv := s.settingsView(p, v, formOf(p))
			sv.Reach = &view
			w.Header().Set("Cache-Control", "no-store")
			s.renderSettings(w, r, http.StatusOK, sv)
			return
		}
		http.Redirect(w, r, settingsPath(p.ID)+"?saved=reach#reach", http.StatusSeeOther)
	})
}

// readReachForm reads the posted form.
func readReachForm(r *http.Request) reachForm {
	_ = r.ParseForm()
	f := reachForm{ReachSettingsForm: views.ReachSettingsForm{
		FirstReach: r.PostFormValue("first_reach"), Named: map[int64]bool{},
		EscalateAfter: strings.TrimSpace(r.PostFormValue("escalate_after")),
		SlackChannel:  strings.TrimSpace(r.PostFormValue("slack_channel")),
		WebhookURL:    strings.TrimSpace(r.PostFormValue("webhook_url"))},
		named:       r.PostForm["named"],
		slackToken:  strings.TrimSpace(r.PostFormValue("slack_token")),
		slackSecret: strings.TrimSpace(r.PostFormValue("slack_secret")),
		disconnect:  r.PostFormValue("slack_disconnect") != "",
		regenerate:  r.PostFormValue("webhook_regenerate") != "",
	}
	for _, id := range f.named {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			f.Named[n] = true
		}
	}
	return f
}

// parseReachSettings checks the form against the stored settings old;
// errs names each refused field.
func (s *Server) parseReachSettings(ctx context.Context, projectID int64, old store.ProjectReach, f reachForm) (store.ProjectReach, map[string]string) {
	errs := map[string]string{}
	pr := old
	if msg := s.parseFirstReach(ctx, projectID, f, &pr); msg != "" {
		errs["first_reach"] = msg
	}
	pr.EscalateAfter = store.DefaultProjectReach.EscalateAfter
	if f.EscalateAfter != "" {
		n, err := strconv.Atoi(f.EscalateAfter)
		if err != nil || n < 0 || n > maxEscalateMinutes {
			errs["escalate_after"] = "A whole number of minutes from 0 (never) to 1440."
		}
		pr.EscalateAfter = n * 60
	}
	for field, msg := range s.parseSlack(ctx, f, &pr) {
		errs[field] = msg
	}
	if msg := s.parseWebhook(f, &pr); msg != "" {
		errs["webhook_url"] = msg
	}
	return pr, errs
}

// parseFirstReach reads who is reached first into pr.
func (s *Server) parseFirstReach(ctx context.Context, projectID int64, f reachForm, pr *store.ProjectReach) string {
	if !slices.Contains([]string{"starter", "all", "named"}, f.FirstReach) {
		return "Choose who is reached first."
	}
	pr.FirstReach, pr.Named = f.FirstReach, []int64{}
	if f.FirstReach != "named" {
		return ""
	}
	members, err := s.st.Members(ctx, projectID)
	if err != nil {
		return "The project's members could not be read; try again."
	}
	for _, m := range members {
		if f.Named[m.UserID] && m.Role != "viewer" {
			pr.Named = append(pr.Named, m.UserID)
		}
	}
	if len(pr.Named) != len(f.named) {
		return "Tick only people who are members (not viewers) of this project."
	}
	if len(pr.Named) == 0 {
		return "Tick at least one person to reach first, or choose another option."
	}
	return ""
}

// parseSlack reads the Slack connection into pr: an empty token or
// secret field keeps the stored one; a new token must pass auth.test.
func (s *Server) parseSlack(ctx context.Context, f reachForm, pr *store.ProjectReach) map[string]string {
	errs := map[string]string{}
	if f.disconnect {
		pr.SlackToken, pr.SlackSecret, pr.SlackChannel = "", "", ""
		return errs
	}
	pr.SlackChannel = f.SlackChannel
	if len(f.SlackChannel) > 80 || strings.ContainsAny(f.SlackChannel, " \t\r\n") {
		errs["slack_channel"] = "A channel is #name or an ID such as C0123456789, without spaces."
	}
	if f.slackSecret != "" {
		if len(f.slackSecret) > maxSlackField || strings.ContainsAny(f.slackSecret, " \t\r\n") || !utf8.ValidString(f.slackSecret) {
			errs["slack_secret"] = "Paste the signing secret from the Slack app's Basic Information page, without spaces."
		}
		pr.SlackSecret = f.slackSecret
	}
	if f.slackToken != "" {
		if msg := s.checkSlackToken(ctx, f.slackToken); msg != "" {
			errs["slack_token"] = msg
		}
		pr.SlackToken = f.slackToken
	}
	if pr.SlackToken != "" && pr.SlackSecret == "" && errs["slack_secret"] == "" {
		errs["slack_secret"] = "Paste the app's signing secret too: without it Parley cannot tell Slack's button clicks from forged ones."
	}
	if pr.SlackToken != "" && pr.SlackChannel == "" && errs["slack_channel"] == "" {
		errs["slack_channel"] = "Name the channel the asks go to, such as #ops."
	}
	return errs
}

// checkSlackToken says why Slack refuses token, or "".
func (s *Server) checkSlackToken(ctx context.Context, token string) string {
	if !strings.HasPrefix(token, "xoxb-") || len(token) > maxSlackField || strings.ContainsAny(token, " \t\r\n") {
		return "Paste the app's bot token: it starts with xoxb- (OAuth & Permissions page)."
	}
	ctx, cancel := context.WithTimeout(ctx, slackCheckTimeout)
	defer cancel()
	if _, err := slack.Check(ctx, slack.Conn{Token: token, APIURL: s.reach.SlackAPI}); err != nil {
		return "Slack did not accept this token (" + truncate(err.Error(), 120) + "). Check that the app is installed and paste its bot token again."
	}
	return ""
}

// parseWebhook reads the webhook into pr; Parley makes its secret.
func (s *Server) parseWebhook(f reachForm, pr *store.ProjectReach) string {
	pr.WebhookURL = f.WebhookURL
	if f.WebhookURL == "" {
		pr.WebhookSecret = ""
		return ""
	}
	if len(f.WebhookURL) > maxWebhookURL {
		return "At most 2000 characters."
	}
	if s.reach.Check != nil {
		if err := s.reach.Check(f.WebhookURL); err != nil {
			return err.Error()
		}
	}
	if pr.WebhookSecret == "" || f.regenerate {
		b := make([]byte, 32)
		rand.Read(b)
		pr.WebhookSecret = hex.EncodeToString(b)
	}
	return ""
}

// reachView shows a project's stored reach settings, secrets hidden.
func (s *Server) reachView(projectID int64, pr store.ProjectReach) views.ReachSettingsForm {
	f := views.ReachSettingsForm{FirstReach: pr.FirstReach, Named: map[int64]bool{},
		EscalateAfter: strconv.Itoa(pr.EscalateAfter / 60), SlackChannel: pr.SlackChannel, WebhookURL: pr.WebhookURL,
		SlackToken: secretOf(pr.SlackToken), SlackSecret: secretOf(pr.SlackSecret), WebhookSecret: secretOf(pr.WebhookSecret)}
	for _, id := range pr.Named {
		f.Named[id] = true
	}
	base := ""
	if s.reach.Reacher != nil {
		base = s.reach.Reacher.BaseURL()
	}
	f.SlackURL = strings.TrimSuffix(base, "/") + "/slack/interactions/" + strconv.FormatInt(projectID, 10)
	return f
}

// reachSettingsView is the section as the settings page first shows it:
// nil when reach is off.
func (s *Server) reachSettingsView(r *http.Request, projectID int64) (*views.ReachSettingsForm, error) {
	if s.reach == nil {
		return nil, nil
	}
	pr, err := s.st.ProjectReachOf(r.Context(), projectID)
	if err != nil {
		return nil, err
	}
	f := s.reachView(projectID, pr)
	f.Saved = r.URL.Query().Get("saved") == "reach"
	return &f, nil
}

// secretOf is what the page shows of a secret: its last four
// characters only when at least twelve stay hidden.
func secretOf(secret string) views.Secret {
	if len(secret) < 16 {
		return views.Secret{Set: secret != ""}
	}
	return views.Secret{Set: true, Ends: secret[len(secret)-4:]}
}
