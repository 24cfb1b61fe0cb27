package slack

import (
	"fmt"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"parley/reach"
)

// BlockPrefix starts the block_id of an ask's buttons; the input ID follows.
// A click names its block, so the ID says which ask it answers.
const BlockPrefix = "parley-ask:"

// Block Kit limits, from https://docs.slack.dev/reference/block-kit/blocks:
// "header … text: Maximum length for the text in this field is 150
// characters", section "text … Maximum length … is 3000 characters",
// button "text … Maximum length … is 75 characters", "value … 2000",
// "action_id … 255", block_id "Maximum length … is 255 characters",
// actions "elements … There is a maximum of 25 elements in each action block".
const (
	maxHeader   = 150
	maxSection  = 3000
	maxContext  = 2000
	maxButton   = 75
	maxID       = 255
	maxElements = 25
)

// blocks lays out m: the title, the body, where it comes from, and either
// the buttons (an ask) or who answered (answered).
func blocks(m reach.Message) []slackapi.Block {
	title := m.Title
	if title == "" {
		title = "Claude asks"
	}
	bs := []slackapi.Block{slackapi.NewHeaderBlock(plain(clip(title, maxHeader)))}
	if m.Body != "" {
		bs = append(bs, slackapi.NewSectionBlock(mrkdwn(clip(escape(m.Body), maxSection)), nil, nil))
	}
	if where := origin(m); where != "" {
		bs = append(bs, slackapi.NewContextBlock("", mrkdwn(clip(where, maxContext))))
	}
	if m.Type == reach.TypeAnswered {
		return append(bs, slackapi.NewContextBlock("", mrkdwn(clip(escape(answered(m)), maxContext))))
	}
	if b := buttons(m); len(b) > 0 {
		bs = append(bs, slackapi.NewActionBlock(clip(BlockPrefix+m.InputID, maxID), b...))
	}
	return bs
}

// origin is the context line: project · session · a link to the ask.
func origin(m reach.Message) string {
	var parts []string
	for _, s := range []string{m.Project, m.Session} {
		if s != "" {
			parts = append(parts, escape(s))
		}
	}
	if web(m.URL) {
		parts = append(parts, "<"+linkTarget(m.URL)+"|Open in Parley>")
	}
	return strings.Join(parts, " · ")
}

// buttons are m's actions; "open" is a link to the ask, not an answer.
func buttons(m reach.Message) []slackapi.BlockElement {
	var es []slackapi.BlockElement
	for i, a := range m.Actions {
		if len(es) == maxElements {
			break
		}
		if a.ID == reach.ActOpen && !web(m.URL) {
			continue
		}
		b := slackapi.NewButtonBlockElement(clip(fmt.Sprintf("parley:%d:%s", i, a.ID), maxID), a.ID, plain(clip(a.Title, maxButton)))
		switch a.ID {
		case reach.ActAllow, reach.ActApprove:
			b.WithStyle(slackapi.StylePrimary)
		case reach.ActDeny:
			b.WithStyle(slackapi.StyleDanger)
		case reach.ActOpen:
			b.WithURL(m.URL)
		}
		es = append(es, b)
	}
	return es
}

// answered says who answered and from where: "Answered by Ann (Slack)".
func answered(m reach.Message) string {
	s := "Answered"
	if m.By != "" {
		s += " by " + m.By
	}
	if m.Via != "" {
		s += " (" + m.Via + ")"
	}
	return s
}

// fallback is the message's plain text: what a notification shows.
func fallback(m reach.Message) string {
	if m.Type == reach.TypeAnswered {
		return answered(m) + ": " + m.Title
	}
	if m.Body == "" {
		return m.Title
	}
	return m.Title + ": " + clip(m.Body, 300)
}

func plain(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
}

// mrkdwn is verbatim text: Slack does not turn bare names into links or
// mentions in it.
func mrkdwn(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, s, false, true)
}

// escape makes text from the model or a member inert in mrkdwn. Slack:
// "you shouldn't encode characters other than these three: & replaced with
// &amp;, < replaced with &lt;, > replaced with &gt;" — without it a body
// could ping <!channel> or hide a link as <https://evil|the docs>.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// linkTarget escapes a URL inside <url|text>, where | ends it.
func linkTarget(u string) string {
	return strings.ReplaceAll(escape(u), "|", "%7C")
}

func web(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

// clip cuts s to at most n characters, ending in … when cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
