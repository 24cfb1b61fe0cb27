package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"parley/runner"
	"parley/store"
	"parley/streamjson"
	"parley/views"
)

// exportedSession is the JSON export: the session and its whole event log,
// payloads as the CLI and Parley wrote them.
type exportedSession struct {
	Session struct {
		ID              string    `json:"id"`
		ProjectID       int64     `json:"project_id"`
		ClaudeSessionID string    `json:"claude_session_id"`
		Title           string    `json:"title"`
		Status          string    `json:"status"`
		TotalCostUSD    float64   `json:"total_cost_usd"`
		NumTurns        int       `json:"num_turns"`
		CreatedBy       string    `json:"created_by"`
		CreatedAt       time.Time `json:"created_at"`
		UpdatedAt       time.Time `json:"updated_at"`
	} `json:"session"`
	Events []exportedEvent `json:"events"`
	// Attachments are the prompts' attachments, ids and metadata only
	// (export_attach.go).
	Attachments []exportedAttachment `json:"attachments"`
}

type exportedEvent struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
}

func exportJSON(sess store.Session, evs []store.Event) exportedSession {
	var x exportedSession
	s := &x.Session
	s.ID, s.ProjectID, s.ClaudeSessionID, s.Title, s.Status = sess.ID, sess.ProjectID, sess.ClaudeSessionID, sess.Title, sess.Status
	s.TotalCostUSD, s.NumTurns, s.CreatedBy, s.CreatedAt, s.UpdatedAt = sess.TotalCostUSD, sess.NumTurns, sess.CreatedBy, sess.CreatedAt, sess.UpdatedAt
	x.Events = make([]exportedEvent, 0, len(evs))
	for _, e := range evs {
		x.Events = append(x.Events, exportedEvent{Seq: e.Seq, Type: e.Type, CreatedAt: e.CreatedAt, Payload: e.Payload})
	}
	x.Attachments = exportedAttachments(evs)
	return x
}

// exportMarkdown writes a transcript people can read: prompts, Claude's
// text as the markdown it is, tool calls with their results, asks with
// their answers, model and mode switches, and each turn's figures.
func exportMarkdown(sess store.Session, evs []store.Event) string {
	return exportMarkdownAt(sess, evs, "")
}

// exportMarkdownAt is exportMarkdown with the attached images' links
// under site (the handler's siteURL; "": paths from the site's root).
func exportMarkdownAt(sess store.Session, evs []store.Event, site string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", sess.Title)
	fmt.Fprintf(&b, "Parley session `%s`, started by %s on %s. Status: %s. Cost %s over %d turns.\n\n",
		sess.ID, orSomeone(sess.CreatedBy), sess.CreatedAt.UTC().Format("2006-01-02 15:04 MST"), sess.Status,
		views.Money(sess.TotalCostUSD), sess.NumTurns)
	for _, e := range evs {
		exportEvent(&b, e)
		if e.Type == "prompt" {
			exportAttachmentsMarkdown(&b, e.Payload, site)
		}
	}
	return b.String()
}

func exportEvent(b *strings.Builder, e store.Event) {
	switch e.Type {
	case "prompt":
		var p struct {
			Text, By string
			Parley   bool
		}
		_ = json.Unmarshal(e.Payload, &p)
		who := orSomeone(p.By)
		if p.Parley {
			who = "Parley, for " + who
		}
		fmt.Fprintf(b, "## %s · %s\n\n%s\n\n", who, e.CreatedAt.UTC().Format("15:04:05"), quoteBlock(p.Text))
	case "assistant":
		var a streamjson.MessageLine[streamjson.Message]
		if json.Unmarshal(e.Payload, &a) != nil || a.ParentToolUseID != nil {
			return
		}
		for _, c := range a.Message.Content {
			switch c.Type {
			case "text":
				fmt.Fprintf(b, "**Claude:**\n\n%s\n\n", c.Text)
			case "tool_use":
				t := toolCard(c.ID, c.Name, c.Input)
				fmt.Fprintf(b, "**Tool %s** %s\n\n%s", t.Name, inlineCode(t.Summary), fenced("json", t.Input))
			}
		}
	case "user":
		var u streamjson.MessageLine[streamjson.Message]
		if json.Unmarshal(e.Payload, &u) != nil || u.ParentToolUseID != nil {
			return
		}
		for _, c := range u.Message.Content {
			if c.Type == "tool_result" {
				label := "Result"
				if c.IsError {
					label = "Error"
				}
				fmt.Fprintf(b, "%s:\n\n%s", label, fenced("text", clip(flattenContent(c.Content))))
			}
		}
	case "input_requested":
		var p struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		var questions []string
		collectQuestions(e.Payload, &questions)
		fmt.Fprintf(b, "**Claude asks** (%s):\n\n", cmp.Or(p.Kind, "question"))
		for _, q := range questions {
			fmt.Fprintf(b, "- %s\n", q)
		}
		b.WriteString("\n")
	case "input_resolved":
		fmt.Fprintf(b, "_%s_\n\n", resolvedText(e.Payload))
	case "result":
		t := turnView(e)
		fmt.Fprintf(b, "_%s · %s_\n\n", t.Title, strings.TrimSpace(turnFiguresText(t)))
		if t.Detail != "" {
			fmt.Fprintf(b, "%s\n\n", quoteBlock(t.Detail))
		}
	case "interrupt":
		var p struct{ By string }
		_ = json.Unmarshal(e.Payload, &p)
		fmt.Fprintf(b, "_Stopped by %s._\n\n", orSomeone(p.By))
	case runner.TypeSwitched:
		var sw runner.Switch
		_ = json.Unmarshal(e.Payload, &sw)
		fmt.Fprintf(b, "_%s_\n\n", switchText(sw)) // as the page says it (modeswitch.go)
	}
}

// resolvedText says how an ask ended, for the export.
func resolvedText(payload []byte) string {
	var p struct {
		Status     string `json:"status"`
		AnsweredBy string `json:"answered_by"`
		Reason     string `json:"reason"`
	}
	_ = json.Unmarshal(payload, &p)
	if p.Status == "answered" {
		return "Answered by " + orSomeone(p.AnsweredBy)
	}
	text := "Question " + strings.ReplaceAll(p.Status, "_", " ")
	if p.Reason != "" {
		text += ": " + p.Reason
	}
	return text
}

// collectQuestions finds the questions of an ask payload, whatever its
// shape (a question, a form, a permission or a plan): every string under
// a "question" key, in order.
func collectQuestions(raw json.RawMessage, out *[]string) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		keys := slices.Sorted(maps.Keys(obj))
		for _, k := range keys {
			var s string
			if (k == "question" || k == "tool_name") && json.Unmarshal(obj[k], &s) == nil && s != "" {
				*out = append(*out, s)
				continue
			}
			collectQuestions(obj[k], out)
		}
		return
	}
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, x := range arr {
			collectQuestions(x, out)
		}
	}
}

func turnFiguresText(t views.Turn) string {
	s := fmt.Sprintf("%s · %s in / %s out tokens · %d %s · %s", views.Money(t.CostUSD), views.Tokens(t.InputTokens),
		views.Tokens(t.OutputTokens), t.Turns, plural(t.Turns, "turn", "turns"), views.Duration(t.DurationMS))
	if t.Model != "" {
		s += " · " + t.Model
	}
	return s
}

// fenced puts text in a code fence longer than any backtick run inside it.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence + "\n\n"
}

func inlineCode(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

func quoteBlock(s string) string {
	return "> " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n> ")
}
