//go:build bench

package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/board"
	"parley/runner/fakeapi"
	"parley/store"
	"parley/views"
)

// boardProject fills the env's project with n sessions of 20 events each,
// every tenth with an open ask, and has the member read every other one.
func boardProject(b *testing.B, e *env, n int) []store.Session {
	b.Helper()
	ctx := b.Context()
	list := make([]store.Session, n)
	for i := range list {
		s, err := e.st.CreateSessionBy(ctx, e.project.ID, fmt.Sprintf("Session %d: fix the flaky build step", i), e.user.Name, e.user.ID)
		if err != nil {
			b.Fatal(err)
		}
		evs := make([]store.Event, 20)
		for j := range evs {
			evs[j] = store.Event{SessionID: s.ID, Seq: int64(j + 1), Type: "assistant", Payload: json.RawMessage(`{"type":"assistant"}`)}
		}
		if err := e.st.AppendEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
		status := []string{"completed", "error", "interrupted", "running"}[i%4]
		if i%10 == 0 {
			askIn(b, e, s.ID, 21)
			status = "waiting"
		}
		if err := e.st.SetSessionStatus(ctx, s.ID, status); err != nil {
			b.Fatal(err)
		}
		if i%2 == 0 {
			if err := e.st.MarkRead(ctx, e.user.ID, s.ID); err != nil {
				b.Fatal(err)
			}
		}
		list[i] = s
	}
	return list
}

// BenchmarkSidebar200 measures a 200-session project's sidebar: reading
// and rendering it for one person (what GET /projects/{id}/sidebar and a
// sidebar socket's first frame cost), and one live status update with
// 1, 20 and 100 sidebars open: the server's CPU from the status change
// to every socket having its frame, and the bytes each socket got.
func BenchmarkSidebar200(b *testing.B) {
	e := newEnv(b, fakeapi.Scenario{}, envOptions{quiet: true})
	startBoards(b, e)
	n := benchInt("PARLEY_BENCH_SESSIONS", 200)
	sessions := boardProject(b, e, n)
	p, err := e.st.GetProject(b.Context(), e.project.ID)
	if err != nil {
		b.Fatal(err)
	}
	v := viewer{ID: e.user.ID, Name: e.user.Name}
	b.Run("render", func(b *testing.B) {
		var size int
		var query time.Duration
		c0 := cpuTime()
		for b.Loop() {
			start := time.Now()
			sb, err := e.srv.sidebar(b.Context(), p, v, roleMember, sessions[0].ID)
			if err != nil {
				b.Fatal(err)
			}
			query += time.Since(start)
			var buf bytes.Buffer
			if err := views.Sidebar(sb).Render(b.Context(), &buf); err != nil {
				b.Fatal(err)
			}
			size = buf.Len()
		}
		cpu := cpuTime() - c0
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "µs-cpu/op")
		figure("sidebar: read and render, CPU of this process", float64(cpu.Microseconds())/float64(b.N), "µs")
		b.ReportMetric(float64(size), "bytes/sidebar")
		b.ReportMetric(float64(query.Microseconds())/float64(b.N), "µs-query/op")
		figure(fmt.Sprintf("sidebar of %d sessions (%d listed): bytes", n, board.SidebarLimit), float64(size), "B")
		figure("sidebar: query (wall)", float64(query.Microseconds())/float64(b.N), "µs")
	})
	for _, viewers := range []int{1, 20, 100} {
		b.Run("update/viewers="+strconv.Itoa(viewers), func(b *testing.B) {
			benchUpdate(b, e, sessions, viewers)
		})
	}
}

// benchUpdate changes one session's status per op and waits until every
// open sidebar has the frame that says so.
func benchUpdate(b *testing.B, e *env, sessions []store.Session, viewers int) {
	pid := strconv.FormatInt(e.project.ID, 10)
	socks := make([]*ws, viewers)
	for i := range socks {
		socks[i] = e.dialPathAs(e.user, "/projects/"+pid+"/sidebar/ws?current="+sessions[1].ID)
		socks[i].waitFor(30*time.Second, `id="sb-list"`)
	}
	target := sessions[3] // running (boardProject)
	statuses := []string{"completed", "running"}
	var bytesGot int
	var cpu, wall time.Duration
	i := 0
	for b.Loop() {
		status := statuses[i%2]
		i++
		c0, t0 := cpuTime(), time.Now()
		if err := e.st.SetSessionStatus(b.Context(), target.ID, status); err != nil {
			b.Fatal(err)
		}
		want := `data-status="` + status + `"`
		for _, s := range socks {
			bytesGot += len(readUntil(b, s, want))
		}
		cpu += cpuTime() - c0
		wall += time.Since(t0)
	}
	for _, s := range socks {
		s.conn.Close()
	}
	per := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/per, "µs-cpu/update")
	b.ReportMetric(float64(bytesGot)/per/float64(viewers), "bytes/viewer/update")
	figure(fmt.Sprintf("sidebar update, %d viewers: CPU of this process (server and the test's sockets)", viewers), float64(cpu.Microseconds())/per, "µs")
	figure(fmt.Sprintf("sidebar update, %d viewers: CPU per viewer", viewers), float64(cpu.Microseconds())/per/float64(viewers), "µs")
	figure(fmt.Sprintf("sidebar update, %d viewers: status change → last viewer has it", viewers), float64(wall.Microseconds())/per/1000, "ms")
	figure(fmt.Sprintf("sidebar update, %d viewers: bytes per viewer", viewers), float64(bytesGot)/per/float64(viewers), "B")
}

// readUntil reads a socket's frames until one holds want; it returns them.
func readUntil(b *testing.B, s *ws, want string) string {
	var got strings.Builder
	deadline := time.After(30 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				b.Fatalf("socket closed waiting for %q", want)
			}
			got.WriteString(f)
			if strings.Contains(f, want) {
				return got.String()
			}
		case <-deadline:
			b.Fatalf("no frame with %q; got %s", want, got.String())
		}
	}
}
