package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"

	"parley/act"
	"parley/modeswitch"
	"parley/runner"
	"parley/store"
	"parley/views"
)

// switchWait bounds a switch: the CLI answers set_model within a second
// (a name it must probe: one model request).
const switchWait = 30 * time.Second

// switcher switches sessions' models and permission modes: through the
// cluster, on the replica that runs the session.
func (s *Server) switcher() *modeswitch.Switcher {
	if r, ok := s.runs.(modeswitch.Runs); ok { // the cluster: the replica running the session switches it
		return modeswitch.New(s.st, r)
	}
	return modeswitch.New(s.st, s.sup)
}

// handleSessionMode renders the header's model and mode menus: the
// choices of the viewer's role, disabled for a viewer.
func (s *Server) handleSessionMode() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		sess, v, err := s.authorizeSession(ctx, r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		role, err := s.checkAccess(ctx, v, sess.ProjectID, actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		off, err := s.switcher().Offer(ctx, sess, role == roleOwner || v.Admin)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		m := views.ModeView{SessionID: sess.ID, Model: off.Model, Mode: off.Mode, Models: off.Models, Modes: off.Modes,
			ReadOnly: !can(role, v.Admin, actPrompt)}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = views.SessionMode(m).Render(ctx, w)
	})
}

// switchMode is the page's switch:
// {"action":"switch","what":"model"|"permission_mode","value":"haiku"}.
func (c *wsConn) switchMode(ctx context.Context, m wsMessage) error {
	var in struct{ What, Value string }
	if json.Unmarshal(m.raw, &in) != nil {
		return errUnreadable
	}
	a, err := c.s.actor(ctx, c.r)
	if err != nil {
		return err
	}
	return c.s.switchSession(ctx, a, c.sess.ID, in.What, strings.TrimSpace(in.Value))
}

// switchSession switches what of the session id to to on behalf of a: a
// member's act (a viewer is refused), within what the project allows a's
// role (modeswitch.ChoicesFor), refused with a sentence otherwise.
func (s *Server) switchSession(ctx context.Context, a act.Actor, id, what, to string) error {
	sess, err := s.acts().Session(ctx, a, id, act.Prompt)
	if err != nil {
		return err
	}
	role, err := s.acts().Access(ctx, a, sess.ProjectID, act.Prompt)
	if err != nil {
		return err
	}
	if err := s.allowPrompt(a.ID); err != nil { // a switch is an event every page gets, like a message
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, switchWait)
	defer cancel()
	err = s.switcher().Switch(ctx, sess, a.Name, role == act.RoleOwner || a.Admin, what, to)
	if r, ok := errors.AsType[*modeswitch.Refusal](err); ok {
		return badRequest(r.Msg)
	}
	return err
}

// typedSwitch makes a prompt "/model NAME" a switch (modeswitch.TypedModel);
// done is false for any other prompt.
func (s *Server) typedSwitch(ctx context.Context, a act.Actor, sess store.Session, text string) (done bool, err error) {
	to, ok := modeswitch.TypedModel(text)
	if !ok {
		return false, nil
	}
	return true, s.switchSession(ctx, a, sess.ID, runner.SwitchModel, to)
}

// switched shows a switch in the transcript, and tells the menus.
func switched(e store.Event) []templ.Component {
	var sw runner.Switch
	_ = json.Unmarshal(e.Payload, &sw)
	return []templ.Component{appendTo(views.Notice(e.Seq, "info", switchText(sw))), views.SwitchState(sw.What, sw.To)}
}

// modeStatus tells the menus of a change of permission mode the CLI made
// or confirmed: system/status carries "permissionMode" (plan mode ends
// when its plan is approved; a set_permission_mode is followed by one).
func modeStatus(e store.Event) []templ.Component {
	var p struct {
		PermissionMode string `json:"permissionMode"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || p.PermissionMode == "" {
		return nil
	}
	return []templ.Component{views.SwitchState(runner.SwitchMode, p.PermissionMode)}
}

// switchText is a switch in a sentence: "Ana switched the model from
// claude-opus-5-5 to haiku (claude-haiku-5-5)."
func switchText(sw runner.Switch) string {
	what := "the model"
	if sw.What == runner.SwitchMode {
		what = "the permission mode"
	}
	to := sw.To
	if sw.Model != "" && sw.Model != sw.To {
		to += " (" + sw.Model + ")"
	}
	t := orSomeone(sw.By) + " switched " + what
	if sw.From != "" {
		t += " from " + sw.From
	}
	t += " to " + to + "."
	if !sw.Live {
		t += " It applies when Claude next starts in this session."
	}
	return t
}
