package mcpsessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"parley/act"
	"parley/mcpapi"
	"parley/safefile"
	"parley/store"
	"parley/streamjson"
	"parley/transcript"
)

// diskSession is a Claude Code session found in a project's CLI state
// ($CLAUDE_CONFIG_DIR/projects/<munged cwd>/<id>.jsonl) that Parley did not
// start: someone ran `claude` in the workspace.
type diskSession struct {
	ID string // the CLI's session id
	// ConfigDir and Name locate its transcript: Name, under ConfigDir.
	ConfigDir, Name string
	Title           string
	Updated         time.Time
}

// nonAlnum is what the CLI replaces with "-" to name a cwd's directory.
var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]`)

// diskSessions lists the CLI sessions of the project's workspace that no
// Parley session of the project has.
// The config dir is the project's runs' to write: it is read as an
// os.Root (no link leads out of it, nor is it itself followed), and only
// regular files are taken (safefile).
func (b *Backend) diskSessions(ctx context.Context, p store.Project) ([]diskSession, error) {
	configDir := b.disk.ConfigDir(p)
	dir := "projects/" + nonAlnum.ReplaceAllString(b.disk.Workspace(p), "-")
	root, err := safefile.RootUnder(configDir)
	var entries []fs.DirEntry
	if err == nil {
		defer root.Close()
		entries, err = fs.ReadDir(root.FS(), dir)
	}
	if err != nil {
		// None to list: the state is missing, or what is there leads out
		// of the project (a link its runs made), which is not read.
		if !errors.Is(err, os.ErrNotExist) {
			b.log.Warn("sessions on disk not read", "project_id", p.ID, "err", err)
		}
		return nil, nil
	}
	known, err := b.st.KnownClaudeSessionIDs(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	var out []diskSession
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() || uuid.Validate(id) != nil || known[strings.ToLower(id)] {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		d := diskSession{ID: id, ConfigDir: configDir, Name: dir + "/" + e.Name(), Updated: info.ModTime()}
		d.Title = firstPrompt(d)
		out = append(out, d)
	}
	return out, nil
}

// maxTranscriptBytes bounds a transcript read for adoption (its lines are
// bounded by transcript.Each).
const maxTranscriptBytes = 64 << 20

// readCLITranscript calls f with each user or assistant line of the disk
// session's transcript: a regular file under its config dir (no link, no
// FIFO), read by transcript.Each, a bounded line at a time.
func readCLITranscript(d diskSession, f func(l streamjson.Entry) bool) error {
	file, err := safefile.OpenGlob(d.ConfigDir, d.Name)
	if err != nil {
		return err
	}
	defer file.Close()
	// A read error ends the list quietly: a torn last line of a live
	// session is what there is.
	_ = transcript.Each(io.LimitReader(file, maxTranscriptBytes), func(l streamjson.Entry, _ []byte) bool {
		if (l.Type != "user" && l.Type != "assistant") || l.IsMeta {
			return true
		}
		return f(l)
	}, nil)
	return nil
}

// userText is the text of a user message that a person typed, "" for
// tool results and the CLI's own command lines. A typed prompt is saved
// as it was sent ({"role":"user","content":"text"}); other user messages
// hold content blocks.
func userText(msg json.RawMessage) string {
	var typed streamjson.UserMessage
	text := ""
	if json.Unmarshal(msg, &typed) == nil {
		text = typed.Content
	} else {
		var m streamjson.Message
		if json.Unmarshal(msg, &m) != nil {
			return ""
		}
		for _, b := range m.Content {
			if b.Type != "text" {
				return ""
			}
			text += b.Text
		}
	}
	if strings.HasPrefix(strings.TrimSpace(text), "<") { // <command-name>, <local-command-stdout>, …
		return ""
	}
	return strings.TrimSpace(text)
}

// firstPrompt is a transcript's first typed message, as a title.
func firstPrompt(d diskSession) string {
	t := ""
	_ = readCLITranscript(d, func(l streamjson.Entry) bool {
		if l.Type == "user" {
			t = userText(l.Message)
		}
		return t == ""
	})
	if t == "" {
		return "Claude Code session"
	}
	return act.Title(t)
}

// importedBy is the author shown for the prompts of an adopted transcript.
const importedBy = "Claude Code (on disk)"

// transcriptEvents turns a transcript into events of Parley's log: typed
// messages as prompts, the rest as the CLI's own user and assistant events.
func transcriptEvents(d diskSession) ([]string, []json.RawMessage, error) {
	var types []string
	var payloads []json.RawMessage
	err := readCLITranscript(d, func(l streamjson.Entry) bool {
		if l.Type == "user" {
			if text := userText(l.Message); text != "" {
				b, _ := json.Marshal(map[string]any{"text": text, "by": importedBy})
				types, payloads = append(types, "prompt"), append(payloads, b)
				return true
			}
		}
		b, _ := json.Marshal(map[string]any{"type": l.Type, "message": l.Message, "imported": true})
		types, payloads = append(types, l.Type), append(payloads, b)
		return true
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read transcript: %w", err)
	}
	n, _ := json.Marshal(map[string]string{"level": "info",
		"text": fmt.Sprintf("Adopted from Claude Code's transcript on disk (%d messages); the next message resumes it.", len(types))})
	return append(types, "notice"), append(payloads, n), nil
}

// adopt makes the disk session with CLI id claudeID, in one of u's
// projects where u may prompt, a Parley session with its transcript.
func (b *Backend) adopt(ctx context.Context, u mcpapi.User, claudeID string) (store.Session, error) {
	if uuid.Validate(claudeID) != nil {
		return store.Session{}, act.ErrNotFound
	}
	list, err := b.st.ProjectsFor(ctx, u.ID, u.Admin)
	if err != nil {
		return store.Session{}, err
	}
	for _, p := range list {
		found, err := b.diskSessions(ctx, p.Project)
		if err != nil {
			return store.Session{}, err
		}
		i := slices.IndexFunc(found, func(d diskSession) bool { return strings.EqualFold(d.ID, claudeID) })
		if i < 0 {
			continue
		}
		if _, err := b.acts.Access(ctx, actorOf(u), p.ID, act.Prompt); err != nil {
			return store.Session{}, err
		}
		types, payloads, err := transcriptEvents(found[i])
		if err != nil {
			return store.Session{}, err
		}
		sess, err := b.st.AdoptSession(ctx, p.ID, strings.ToLower(claudeID), found[i].Title, u.Name, u.ID, types, payloads)
		if errors.Is(err, store.ErrExists) {
			return b.st.SessionByClaudeID(ctx, p.ID, strings.ToLower(claudeID))
		}
		return sess, err
	}
	return store.Session{}, act.ErrNotFound
}
