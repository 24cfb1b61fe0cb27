package transcript

import (
	"encoding/json"
	"strings"

	"parley/store"
	"parley/streamjson"
)

// state is what the log already holds, as far as reconciling goes.
type state struct {
	streamed map[string]bool // message ids with a message_start in the log
	last     int64           // the log's last seq
	keys     map[string]bool // uuids, tool ids and message texts in the log
	runOpen  bool            // the last run_started has no run_ended after it
	runSeq   int64           // the last run_started's seq
	// streams are the main conversation's streamed messages in order, with
	// their text so far; done are the message ids with an assistant event.
	streams []*stream
	done    map[string]bool
	turns   turns // the last run's
}

type stream struct {
	id   string
	text strings.Builder
}

// scan reads the log.
func scan(evs []store.Event) *state {
	st := &state{keys: map[string]bool{}, done: map[string]bool{}, streamed: map[string]bool{}}
	byID := map[string]*stream{}
	var cur *stream
	for _, ev := range evs {
		st.last = ev.Seq
		st.turns.follow(ev.Type, ev.Payload, false)
		switch ev.Type {
		case "run_started":
			st.runOpen, st.runSeq = true, ev.Seq
		case "run_ended":
			st.runOpen = false
		case "assistant", "user":
			var p streamjson.MessageLine[json.RawMessage]
			if json.Unmarshal(ev.Payload, &p) != nil || p.ParentToolUseID != nil {
				continue
			}
			st.note(entry{Type: ev.Type, UUID: p.UUID, Message: p.Message})
		case "stream_event":
			e, ok := streamjson.DecodeStreamEvent(ev.Payload)
			if !ok {
				continue
			}
			switch {
			case e.Type == "message_start" && e.MessageID != "":
				st.streamed[e.MessageID] = true
				if byID[e.MessageID] == nil {
					// Pointers: a stream's text builder must not be copied
					// when the slice grows.
					byID[e.MessageID] = &stream{id: e.MessageID}
					st.streams = append(st.streams, byID[e.MessageID])
				}
				cur = byID[e.MessageID]
			case e.IsTextDelta() && cur != nil:
				cur.text.WriteString(e.Text)
			}
		}
	}
	return st
}

// note adds what identifies e to the keys.
func (st *state) note(e entry) {
	if e.UUID != "" {
		st.keys["uuid:"+e.UUID] = true
	}
	var m streamjson.Message
	if json.Unmarshal(e.Message, &m) != nil {
		return
	}
	if e.Type == "assistant" && m.ID != "" {
		st.done[m.ID] = true
	}
	for _, k := range blockKeys(e.Type, m) {
		st.keys[k] = true
	}
}

// blockKeys are the ids of a message's blocks: tool_use ids, tool_result
// ids, and a text block's message id and text.
func blockKeys(typ string, m streamjson.Message) []string {
	var out []string
	for _, b := range m.Content {
		switch {
		case typ == "assistant" && b.Type == "tool_use" && b.ID != "":
			out = append(out, "tool_use:"+b.ID)
		case typ == "user" && b.Type == "tool_result" && b.ToolUseID != "":
			out = append(out, "tool_result:"+b.ToolUseID)
		case typ == "assistant" && b.Type == "text" && m.ID != "":
			out = append(out, "text:"+m.ID+":"+b.Text)
		}
	}
	return out
}

// known reports whether the log holds e.
func (st *state) known(e entry) bool {
	if st.keys["uuid:"+e.UUID] {
		return true
	}
	var m streamjson.Message
	if json.Unmarshal(e.Message, &m) != nil {
		return false
	}
	keys := blockKeys(e.Type, m)
	for _, k := range keys {
		if !st.keys[k] {
			return false
		}
	}
	return len(keys) > 0
}

// missing returns the entries the log lacks, in order. Entries before the
// first one the log holds are left out when it holds any: those were never
// Parley's (a conversation resumed from elsewhere).
func (st *state) missing(entries []entry) []entry {
	first := -1
	for i, e := range entries {
		if st.known(e) {
			first = i
			break
		}
	}
	var out []entry
	for i, e := range entries {
		if i < first || st.known(e) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// cutOff returns an assistant event for each streamed message of the
// main conversation that never got its assistant event: the page's live
// block of it is replaced by the text streamed so far, marked as cut off.
func (st *state) cutOff() []json.RawMessage {
	var out []json.RawMessage
	for _, s := range st.streams {
		if st.done[s.id] {
			continue
		}
		out = append(out, mustJSON(map[string]any{"type": "assistant", "parent_tool_use_id": nil,
			"parley_cut_off": true, "message": map[string]any{"id": s.id, "role": "assistant",
				"content": []map[string]any{{"type": "text", "text": s.text.String()}}}}))
	}
	return out
}

// unstreamedText reports an assistant entry with text whose message never
// started streaming in the log, and marks it started.
func (st *state) unstreamedText(e entry) (string, bool) {
	var m streamjson.Message
	if e.Type != "assistant" || json.Unmarshal(e.Message, &m) != nil || m.ID == "" || st.streamed[m.ID] {
		return "", false
	}
	for _, b := range m.Content {
		if b.Type == "text" && b.Text != "" {
			st.streamed[m.ID] = true
			return m.ID, true
		}
	}
	return "", false
}
