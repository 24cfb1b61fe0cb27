package server

import (
	"net/http"
	"regexp"
	"time"

	"parley/store"
	"parley/views"
)

// The notifications page: a person's push devices, quiet hours and
// whether asks also reach them by e-mail (package reach does the rest).

func (s *Server) handleNotifications() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		ds, err := s.st.PushDevices(r.Context(), v.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		u, err := s.st.UserReachOf(r.Context(), v.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		n := views.Notifications{PushReady: s.reach.Devices.PublicKey != "", QuietFrom: u.QuietFrom, QuietTo: u.QuietTo,
			TZ: u.TZ, EmailAsks: u.EmailAsks, MailReady: s.reach.Reacher.Channels().Mail != nil, Email: v.Email,
			Saved: r.URL.Query().Get("saved") == "1"}
		for _, d := range ds {
			nd := views.NotificationDevice{ID: d.ID, Name: d.Name, Added: d.CreatedAt.Format("2006-01-02"), LastOutcome: d.LastOutcome}
			if d.LastUsedAt != nil {
				nd.LastUsed = d.LastUsedAt.Format("2006-01-02 15:04")
			}
			n.Devices = append(n.Devices, nd)
		}
		render(w, r, views.NotificationsPage(n))
	})
}

var hhmm = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

func (s *Server) handleNotificationsSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		u := store.UserReach{QuietFrom: r.PostFormValue("quiet_from"), QuietTo: r.PostFormValue("quiet_to"),
			TZ: r.PostFormValue("tz"), EmailAsks: r.PostFormValue("email_asks") != ""}
		if (u.QuietFrom != "" && !hhmm.MatchString(u.QuietFrom)) || (u.QuietTo != "" && !hhmm.MatchString(u.QuietTo)) {
			s.fail(w, r, badRequest("Quiet hours are times of day such as 22:00 and 07:30."))
			return
		}
		if u.TZ == "" {
			u.TZ = "UTC"
		}
		if _, err := time.LoadLocation(u.TZ); err != nil || len(u.TZ) > 64 {
			s.fail(w, r, badRequest("The time zone "+quote(u.TZ)+" is not one Parley knows; use a name such as Europe/Berlin."))
			return
		}
		if err := s.st.SetUserReach(r.Context(), v.ID, u); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/notifications?saved=1", http.StatusSeeOther)
	})
}
