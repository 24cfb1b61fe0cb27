package slack

import "testing"

func TestSlacksResponseURLPasses(t *testing.T) {
	if err := checkResponseURL(Conn{}, "https://hooks.slack.com/actions/T0PARLEY/1/x"); err != nil {
		t.Errorf("Slack's response URL refused: %v", err)
	}
}
