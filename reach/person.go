package reach

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"parley/store"
)

// person reaches one member: a push to each of their devices, and an
// e-mail if they asked for asks by e-mail. Quiet hours hold both.
func (r *Reacher) person(ctx context.Context, a Ask, m store.Member, s int) {
	uid := m.UserID
	ur, err := r.st.UserReachOf(ctx, uid)
	if err != nil {
		r.log.Warn("reach", "input_id", a.InputID, "err", err)
		return
	}
	if quiet(ur, time.Now()) {
		r.record(ctx, store.Delivery{InputID: a.InputID, UserID: &uid, Channel: "push", Target: displayName(m),
			Outcome: "quiet", Detail: "quiet hours " + ur.QuietFrom + "–" + ur.QuietTo})
		return
	}
	canAnswer := m.Role != "viewer"
	devices := r.pushDevices(ctx, a, m)
	for _, d := range devices {
		r.push(ctx, a, m, d, canAnswer)
	}
	if ur.EmailAsks || (s == stageEscalate && len(devices) == 0) {
		r.mail(ctx, a, m, canAnswer)
	}
}

// pushDevices lists m's devices, recording "no device" when there are
// none (or the installation has no push).
func (r *Reacher) pushDevices(ctx context.Context, a Ask, m store.Member) []store.PushDevice {
	uid := m.UserID
	var ds []store.PushDevice
	if r.ch.Push != nil {
		var err error
		if ds, err = r.st.PushDevices(ctx, uid); err != nil {
			r.log.Warn("reach", "input_id", a.InputID, "err", err)
			return nil
		}
	}
	if len(ds) == 0 {
		r.record(ctx, store.Delivery{InputID: a.InputID, UserID: &uid, Channel: "push", Target: displayName(m), Outcome: "no_device"})
	}
	return ds
}

// push sends the ask to one device with an answer token of its own.
func (r *Reacher) push(ctx context.Context, a Ask, m store.Member, d store.PushDevice, canAnswer bool) {
	uid := m.UserID
	msg := Compose(r.cfg.BaseURL, a, canAnswer)
	via := deviceName(m, d)
	if msg.Answerable() {
		tok, err := r.token(ctx, a.InputID, uid, via)
		if err != nil {
			r.log.Warn("reach", "input_id", a.InputID, "err", err)
			return
		}
		msg.Token = tok
	}
	d0 := store.Delivery{InputID: a.InputID, UserID: &uid, Channel: "push", Target: via, Ref: strconv.FormatInt(d.ID, 10)}
	r.sendPush(ctx, d, msg, d0)
}

// sendPush sends msg to d and records the outcome as d0's; a device its
// push service no longer knows is removed.
func (r *Reacher) sendPush(ctx context.Context, d store.PushDevice, msg Message, d0 store.Delivery) {
	err := r.pushTo(ctx, d, msg)
	d0.Outcome = "sent"
	switch {
	case errors.Is(err, ErrGone):
		d0.Outcome, d0.Detail = "failed", "the device is gone; removed"
	case err != nil:
		d0.Outcome, d0.Detail = "failed", err.Error()
	}
	r.record(ctx, d0)
}

// pushTo sends msg to d and keeps the device's state: a device its push
// service no longer knows is removed, any other is marked with how its
// push went.
func (r *Reacher) pushTo(ctx context.Context, d store.PushDevice, msg Message) error {
	err := r.ch.Push.Push(ctx, d, msg)
	switch {
	case errors.Is(err, ErrGone):
		r.st.DeletePushDevice(ctx, 0, d.ID)
	case err != nil:
		r.st.MarkPushDevice(ctx, d.ID, "failed")
	default:
		r.st.MarkPushDevice(ctx, d.ID, "sent")
	}
	return err
}

// deviceName is how a delivery names a device: "Ann's phone".
func deviceName(m store.Member, d store.PushDevice) string {
	n := strings.TrimSpace(d.Name)
	if n == "" {
		n = "device " + strconv.FormatInt(d.ID, 10)
	}
	return displayName(m) + "'s " + n
}

// token makes and stores an answer token of uid for the ask.
func (r *Reacher) token(ctx context.Context, inputID string, uid int64, via string) (string, error) {
	tok, hash := NewToken()
	return tok, r.st.AddAnswerToken(ctx, hash, inputID, uid, via, time.Now().Add(r.cfg.TokenTTL))
}

// mail e-mails the ask to m, with one link per answering action; each
// opens a confirm page (a GET never answers).
func (r *Reacher) mail(ctx context.Context, a Ask, m store.Member, canAnswer bool) {
	if r.ch.Mail == nil || m.Email == "" {
		return
	}
	uid := m.UserID
	msg := Compose(r.cfg.BaseURL, a, canAnswer)
	var links []Link
	if msg.Answerable() {
		tok, err := r.token(ctx, a.InputID, uid, "e-mail")
		if err != nil {
			r.log.Warn("reach", "input_id", a.InputID, "err", err)
			return
		}
		for _, act := range msg.Actions {
			if act.ID != ActOpen {
				links = append(links, Link{Title: act.Title, URL: ConfirmURL(r.cfg.BaseURL, tok, act.ID)})
			}
		}
	}
	d := store.Delivery{InputID: a.InputID, UserID: &uid, Channel: "email", Target: m.Email, Outcome: "sent"}
	if err := r.ch.Mail.Mail(ctx, m.Email, msg, links); err != nil {
		d.Outcome, d.Detail = "failed", err.Error()
	}
	r.record(ctx, d)
}

// ConfirmURL is an e-mail's one-click answer: a page that asks to confirm.
func ConfirmURL(base, token, action string) string {
	return strings.TrimRight(base, "/") + "/reach/a/" + token + "?action=" + url.QueryEscape(action)
}

// mailWithoutDevice e-mails, at the escalation, a first-reached person
// who has no push device and was not e-mailed yet.
func (r *Reacher) mailWithoutDevice(ctx context.Context, a Ask, m store.Member) {
	if r.ch.Mail == nil {
		return
	}
	ur, err := r.st.UserReachOf(ctx, m.UserID)
	if err != nil || ur.EmailAsks || quiet(ur, time.Now()) {
		return
	}
	if ds, err := r.st.PushDevices(ctx, m.UserID); err != nil || len(ds) > 0 {
		return
	}
	r.mail(ctx, a, m, m.Role != "viewer")
}

// TestPush sends a test notification to d now, recording its outcome on
// the device.
func (r *Reacher) TestPush(ctx context.Context, d store.PushDevice) error {
	if r.ch.Push == nil {
		return errors.New("push notifications are off on this server")
	}
	msg := Message{Type: TypeAsk, InputID: "test-" + strconv.FormatInt(d.ID, 10), Title: "Parley test notification",
		Body: "Notifications work on this device.", URL: strings.TrimRight(r.cfg.BaseURL, "/") + "/notifications",
		Actions: []Action{{ID: ActOpen, Title: "Open"}}}
	return r.pushTo(ctx, d, msg)
}
