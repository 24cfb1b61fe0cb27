package runner

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"parley/runner/fakeapi"
)

// TestSwitchLiveProcess switches the live CLI's model and permission mode
// with set_model / set_permission_mode (measured in docs/cli-control.md):
// the model's next request uses the new model, each switch is one event
// saying who switched from what to what, the CLI's echo of set_model is
// neither kept nor counted as a prompt it read, and a model the CLI cannot
// resolve comes back as its refusal.
func TestSwitchLiveProcess(t *testing.T) {
	claude := fakeapi.ClaudeBin(t)
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "one"}, {Text: "two"}, {Text: "three"}})
	sup, j, pub := newTestSupervisor(t, claude, fake.Env(t.TempDir()))
	o := testOptions(t, "")
	ctx := t.Context()
	if err := sup.Prompt(ctx, "s1", With(o), "first", Author{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")

	if err := sup.Switch(ctx, 0, "s1", Switch{What: SwitchModel, From: "claude-opus-5-5", To: "haiku", By: "ann"}); err != nil {
		t.Fatalf("switch the model: %v", err)
	}
	var sw Switch
	if err := json.Unmarshal(waitType(t, pub, TypeSwitched).Payload, &sw); err != nil {
		t.Fatal(err)
	}
	if want := (Switch{What: SwitchModel, From: "claude-opus-5-5", To: "haiku", Model: "claude-haiku-5-5", By: "ann", Live: true}); sw != want {
		t.Errorf("switch event = %+v, want %+v", sw, want)
	}
	if err := sup.Prompt(ctx, "s1", With(o), "second", Author{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	if reqs := fake.Requests(); len(reqs) != 2 || reqs[1].Model != "claude-haiku-5-5" {
		t.Fatalf("the request after set_model: %d requests, model %q; want claude-haiku-5-5", len(reqs), reqs[len(reqs)-1].Model)
	}

	err := sup.Switch(ctx, 0, "s1", Switch{What: SwitchModel, To: "no-such-model", By: "ann"})
	if se, ok := errors.AsType[*SwitchError](err); !ok || se.Code != "check_failed" {
		t.Errorf("switch to an unknown model: %v, want the CLI's check_failed refusal", err)
	}
	if err := sup.Switch(ctx, 0, "s1", Switch{What: SwitchMode, From: "default", To: "plan", By: "bo"}); err != nil {
		t.Fatalf("switch the mode: %v", err)
	}
	waitType(t, pub, TypeSwitched)
	status := waitType(t, pub, "system")
	if !strings.Contains(string(status.Payload), `"permissionMode":"plan"`) {
		t.Errorf("after set_permission_mode plan the CLI printed %s, want a status with permissionMode plan", status.Payload)
	}
	// The echo of set_model was not counted as a prompt read: the next
	// prompt still runs as a turn of its own and ends the session idle.
	if err := sup.Prompt(ctx, "s1", With(o), "third", Author{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	for _, e := range j.snapshot() {
		if e.Type == "user" && strings.Contains(string(e.Payload), "local-command-stdout") {
			t.Errorf("the CLI's echo of set_model was kept: %s", e.Payload)
		}
	}
	if got := j.lastStatus(); got != StatusCompleted {
		t.Errorf("session status after the third turn = %q, want %q", got, StatusCompleted)
	}
}

// TestSwitchWithoutProcess records a switch of a session with no live
// process as an event of its own, for the next start.
func TestSwitchWithoutProcess(t *testing.T) {
	sup, j, pub := newTestSupervisor(t, "/bin/false", nil)
	if err := sup.Switch(t.Context(), 7, "s2", Switch{What: SwitchMode, From: "default", To: "plan", By: "ann"}); err != nil {
		t.Fatal(err)
	}
	e := waitType(t, pub, TypeSwitched)
	if e.Seq != 1 || e.ProjectID != 7 || !strings.Contains(string(e.Payload), `"live":false`) || len(j.snapshot()) != 1 {
		t.Errorf("event %+v %s; want seq 1 of project 7, not live, stored", e, e.Payload)
	}
}

// TestSwitchEchoIsNoPromptRead: the CLI's echo of a set_model made while a
// turn runs and another waits is not the waiting prompt read: when the
// running turn ends the session is still running (the queued turn is
// owed), not completed.
func TestSwitchEchoIsNoPromptRead(t *testing.T) {
	claude := fakeapi.ClaudeBin(t)
	hold := make(chan struct{})
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "slow", Hold: hold}, {Text: "queued answer"}})
	sup, j, pub := newTestSupervisor(t, claude, fake.Env(t.TempDir()))
	o := testOptions(t, "")
	ctx := t.Context()
	if err := sup.Prompt(ctx, "s1", With(o), "first", Author{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := sup.Prompt(ctx, "s1", With(o), "second", Author{Name: "ann"}); err != nil {
		t.Fatal(err)
	}
	if err := sup.Switch(ctx, 0, "s1", Switch{What: SwitchModel, To: "haiku", By: "ann"}); err != nil {
		t.Fatalf("switch mid-turn: %v", err)
	}
	close(hold)
	waitType(t, pub, "result")
	if got := j.lastStatus(); got != StatusRunning {
		t.Errorf("after the first of two turns the session is %q, want %q", got, StatusRunning)
	}
	waitType(t, pub, "result")
	if got := j.lastStatus(); got != StatusCompleted {
		t.Errorf("after both turns the session is %q, want %q", got, StatusCompleted)
	}
}
