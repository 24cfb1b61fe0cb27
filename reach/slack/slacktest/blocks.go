package slacktest

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Block is the part of a Block Kit block tests look at.
type Block struct {
	Type     string    `json:"type"`
	BlockID  string    `json:"block_id"`
	Text     *Text     `json:"text"`
	Elements []Element `json:"elements"`
}

// Text is a text object.
type Text struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Element is a button, or a context block's text.
type Element struct {
	Type     string
	ActionID string
	Value    string
	URL      string
	Style    string
	Text     Text
}

// UnmarshalJSON reads a button (its text an object) or a text object (its
// text a string).
func (e *Element) UnmarshalJSON(b []byte) error {
	var raw struct {
		Type     string          `json:"type"`
		ActionID string          `json:"action_id"`
		Value    string          `json:"value"`
		URL      string          `json:"url"`
		Style    string          `json:"style"`
		Text     json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*e = Element{Type: raw.Type, ActionID: raw.ActionID, Value: raw.Value, URL: raw.URL, Style: raw.Style}
	if len(raw.Text) > 0 && raw.Text[0] == '"' {
		e.Text.Type = raw.Type
		return json.Unmarshal(raw.Text, &e.Text.Text)
	}
	if len(raw.Text) > 0 {
		return json.Unmarshal(raw.Text, &e.Text)
	}
	return nil
}

// ParseBlocks reads a call's blocks.
func ParseBlocks(raw json.RawMessage) ([]Block, error) {
	var bs []Block
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

// Shown is every text the blocks show, one a line, as sent (mrkdwn
// escapes included).
func Shown(bs []Block) string {
	var lines []string
	for _, b := range bs {
		if b.Text != nil {
			lines = append(lines, b.Text.Text)
		}
		for _, e := range b.Elements {
			lines = append(lines, e.Text.Text)
		}
	}
	return strings.Join(lines, "\n")
}

// Buttons returns the buttons of the blocks' actions blocks, each with the
// block_id it sits in.
func Buttons(bs []Block) (buttons []Element, blockIDs []string) {
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			buttons = append(buttons, e)
			blockIDs = append(blockIDs, b.BlockID)
		}
	}
	return buttons, blockIDs
}

// check refuses what Slack refuses: no channel, no content, blocks over
// Block Kit's limits or with an action_id or block_id used twice.
func check(c *Call) string {
	switch {
	case c.Channel == "":
		return "channel_not_found"
	case c.Text == "" && len(c.Blocks) == 0:
		return "no_text"
	case len(c.Blocks) == 0:
		return ""
	}
	bs, err := ParseBlocks(c.Blocks)
	if err != nil || len(bs) > 50 {
		return "invalid_blocks"
	}
	seen := map[string]bool{}
	for _, b := range bs {
		if !blockOK(b, seen) {
			return "invalid_blocks"
		}
	}
	return ""
}

func blockOK(b Block, seen map[string]bool) bool {
	if b.BlockID != "" {
		if seen["block "+b.BlockID] || over(b.BlockID, 255) {
			return false
		}
		seen["block "+b.BlockID] = true
	}
	switch b.Type {
	case "header":
		return b.Text != nil && b.Text.Type == "plain_text" && !over(b.Text.Text, 150)
	case "section":
		return b.Text != nil && !over(b.Text.Text, 3000)
	case "context":
		return len(b.Elements) > 0 && len(b.Elements) <= 10
	case "actions":
		return len(b.Elements) > 0 && len(b.Elements) <= 25 && buttonsOK(b.Elements, seen)
	}
	return true
}

func buttonsOK(es []Element, seen map[string]bool) bool {
	for _, e := range es {
		id := "action " + e.ActionID
		if e.Type != "button" || e.ActionID == "" || seen[id] || over(e.ActionID, 255) ||
			e.Text.Type != "plain_text" || e.Text.Text == "" || over(e.Text.Text, 75) ||
			over(e.Value, 2000) || over(e.URL, 3000) {
			return false
		}
		seen[id] = true
	}
	return true
}

func over(s string, n int) bool { return utf8.RuneCountInString(s) > n }
