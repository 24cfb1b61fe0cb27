package runner

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// checkEditedInput validates a tool input a member edited before allowing
// it: a JSON object, allowed once (not "always"), and not together with an
// edited Bash command. The CLI runs the tool with it as "updatedInput"
// (shared/claude-cli.md: "updatedInput may change the input").
func checkEditedInput(resp Response) error {
	if resp.Input == nil {
		return nil
	}
	if resp.AllowAlways {
		return &AnswerError{Msg: "An edited input can be allowed once, not always."}
	}
	if resp.Command != nil {
		return &AnswerError{Msg: "Edit the command or the whole input, not both."}
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(resp.Input))
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return &AnswerError{Msg: "The edited input is not a JSON object; fix it and allow again."}
	}
	return nil
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
