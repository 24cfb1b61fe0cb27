package server

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Helpers of the crash fault tests (fault_crash_test.go): processes seen
// through /proc, and Claude's transcript of a session.

// procTree returns pid and every live descendant of it.
func procTree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(p); ok {
			children[st.ppid] = append(children[st.ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

type procInfo struct {
	state      string
	ppid, pgid int
	cmd        string
}

// procStat reads /proc/pid/stat; a zombie or a missing process is not ok.
func procStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return procInfo{}, false
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return procInfo{state: f[0], ppid: ppid, pgid: pgid, cmd: s[i+1 : j]}, true
}

// survivors waits up to timeout for the processes to end and returns those
// still alive, described.
func survivors(pids []int, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var alive []string
		for _, p := range pids {
			if st, ok := procStat(p); ok {
				alive = append(alive, strconv.Itoa(p)+" "+st.cmd+" pgid "+strconv.Itoa(st.pgid))
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		<-tick.C
	}
}

// waitUntil checks cond every 50 ms until it holds or timeout passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// transcriptPath finds the CLI's transcript of a session under the data dir.
func (e *env) transcriptPath(claudeSessionID string) string {
	m, _ := filepath.Glob(filepath.Join(e.dataDir, "projects", "*", "claude", "projects", "*", claudeSessionID+".jsonl"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// step of a conversation: an assistant message or a tool result, by uuid.
type convStep struct {
	UUID      string
	Type      string
	Recovered bool
}

// transcriptSteps reads the main conversation's assistant messages and
// tool results from the CLI's transcript, in order.
func transcriptSteps(t *testing.T, path string) []convStep {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var out []convStep
	for {
		line, err := r.ReadBytes('\n')
		var l struct {
			Type        string `json:"type"`
			UUID        string `json:"uuid"`
			IsSidechain bool   `json:"isSidechain"`
			Message     struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &l) == nil && !l.IsSidechain && isStep(l.Type, l.Message.Content) {
			out = append(out, convStep{UUID: l.UUID, Type: l.Type})
		}
		if err != nil {
			return out
		}
	}
}

// isStep: an assistant message, or a user message carrying a tool result.
func isStep(typ string, content json.RawMessage) bool {
	return typ == "assistant" || typ == "user" && strings.Contains(string(content), `"tool_result"`)
}

// logSteps reads the same from the session's event log.
func (e *env) logSteps(sessionID string) []convStep {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []convStep
	for _, ev := range evs {
		var p struct {
			UUID      string  `json:"uuid"`
			Parent    *string `json:"parent_tool_use_id"`
			Recovered bool    `json:"parley_recovered"`
			Message   struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil || p.Parent != nil || p.UUID == "" || !isStep(ev.Type, p.Message.Content) {
			continue
		}
		out = append(out, convStep{UUID: p.UUID, Type: ev.Type, Recovered: p.Recovered})
	}
	return out
}
