package asks

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/askuser"
	"parley/runner"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// ParseAnswer reads the answer flags of `parley asks answer` into a
// response. Which fields fit which ask is checked by the server, as for an
// answer from a page.
func ParseAnswer(args []string) (runner.Response, error) {
	for _, a := range args {
		// json.Marshal would send U+FFFD in place of the bad bytes.
		if !utf8.ValidString(a) {
			return runner.Response{}, fmt.Errorf("asks answer: %q is not valid UTF-8 text; nothing was sent", a)
		}
	}
	fs := flag.NewFlagSet("parley asks answer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var choice, text listFlag
	fs.Var(&choice, "choice", "")
	fs.Var(&text, "text", "")
	allow := fs.Bool("allow", false, "")
	always := fs.Bool("always", false, "")
	deny := fs.Bool("deny", false, "")
	decline := fs.Bool("decline", false, "")
	approve := fs.Bool("approve", false, "")
	changes := fs.Bool("changes", false, "")
	mode := fs.String("mode", "", "")
	reason := fs.String("reason", "", "")
	command := fs.String("command", "", "")
	input := fs.String("input", "", "")
	if err := fs.Parse(args); err != nil {
		return runner.Response{}, fmt.Errorf("asks answer: %w", err)
	}
	if fs.NArg() > 0 {
		return runner.Response{}, fmt.Errorf("asks answer: unexpected %q (flags only after the ID)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	verbs := 0
	for _, v := range []bool{*allow, *always, *deny, *decline, *approve, *changes, len(choice)+len(text) > 0} {
		if v {
			verbs++
		}
	}
	if verbs != 1 {
		return runner.Response{}, errors.New("asks answer: give one answer: --choice/--text, --decline, --allow, --always, --deny, --approve or --changes")
	}
	resp := runner.Response{Reason: strings.TrimSpace(*reason)}
	switch {
	case *allow:
		if set["command"] {
			resp.Command = command
		}
		if set["input"] {
			if !json.Valid([]byte(*input)) {
				return runner.Response{}, errors.New("asks answer: --input is not valid JSON")
			}
			resp.Input = json.RawMessage(*input)
		}
	case *always:
		resp.AllowAlways = true
	case *deny, *decline, *changes:
		resp.Decline = true
	case *approve:
		resp.Mode = *mode
	default:
		replies, err := parseReplies(choice, text)
		if err != nil {
			return runner.Response{}, err
		}
		resp.Replies = replies
	}
	if set["command"] && !*allow {
		return runner.Response{}, errors.New("asks answer: --command goes with --allow")
	}
	if set["input"] && !*allow {
		return runner.Response{}, errors.New("asks answer: --input goes with --allow")
	}
	if set["mode"] && !*approve {
		return runner.Response{}, errors.New("asks answer: --mode goes with --approve")
	}
	if resp.Reason != "" && !resp.Decline {
		return runner.Response{}, errors.New("asks answer: --reason goes with --decline, --deny or --changes")
	}
	return resp, nil
}

// parseReplies builds one reply per question from --choice and --text
// values, each for question 1 unless written N=VALUE.
func parseReplies(choice, text []string) ([]askuser.Reply, error) {
	var replies []askuser.Reply
	at := func(n int) *askuser.Reply {
		for len(replies) < n {
			replies = append(replies, askuser.Reply{})
		}
		return &replies[n-1]
	}
	for _, c := range choice {
		n, v := numbered(c)
		at(n).Selected = append(at(n).Selected, v)
	}
	for _, t := range text {
		n, v := numbered(t)
		r := at(n)
		if r.Text != "" {
			return nil, fmt.Errorf("asks answer: question %d has two --text values", n)
		}
		r.Text = strings.TrimSpace(v)
	}
	return replies, nil
}

// numbered splits "N=value" (N from 1 to 4) into N and value; anything
// else is value for question 1.
func numbered(s string) (int, string) {
	if len(s) >= 2 && s[1] == '=' {
		if n, err := strconv.Atoi(s[:1]); err == nil && n >= 1 && n <= 4 {
			return n, s[2:]
		}
	}
	return 1, s
}
