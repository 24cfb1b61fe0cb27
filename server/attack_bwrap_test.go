package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestAttackBwrap plays a member of a project whose Claude attacks
// bubblewrap's confinement (issue 27, attacks 2 and 3), through the real
// CLI, as `parley serve` runs it with PARLEY_ISOLATION=bwrap: as root
// (bwrap then starts as the project's uid), or as another user. The
// operator keeps an env file and a PostgreSQL socket outside the data
// directory, where a file allowlist has to keep them out, and the server's
// web port and the model's upstream listen on the host's loopback. Each
// Bash call must fail, and the model's requests must still get through the
// gateway (every step after a Bash call is one).
func TestAttackBwrap(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("bwrap not installed (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("bwrap not installed")
	}
	a := bwrapAttacks()
	var sc fakeapi.Scenario
	for range a {
		sc = append(sc, fakeapi.Step{ToolName: "Bash"}, fakeapi.Step{Text: "OUT " + fakeapi.ToolResultPlaceholder})
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: "bwrap", guard: true})
	op := operatorHost(t, e.dbURL)
	ctx := t.Context()
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(ctx, e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(mustURL(t, e.dbURL).Path, "/")
	vars := strings.NewReplacer("{ENV_FILE}", op.envFile, "{PG_SOCKDIR}", op.sockDir, "{PG_DB}", dbName, "{PSQL}", psql(),
		"{WEB_PORT}", mustURL(t, e.web.URL).Port(), "{MODEL_PORT}", mustURL(t, e.fake.URL()).Port())
	for i := range a {
		a[i].command = vars.Replace(a[i].command)
		e.fake.SetStep(2*i, fakeapi.Step{ToolName: "Bash", ToolInput: map[string]any{"command": a[i].command}})
	}
	s := e.newSession()
	w := e.dial(s.ID, 0)
	for i, at := range a {
		w.prompt("attack: " + at.name)
		w.waitFor(60*time.Second, "OUT ", "Done ·")
		out, _ := e.lastToolResult(2 + 2*i)
		t.Logf("%s: %s\n%s", at.name, at.command, out)
		for _, bad := range at.mustNot {
			if bad = vars.Replace(bad); strings.Contains(out, bad) {
				t.Errorf("attack %q worked: the output holds %q", at.name, bad)
			}
		}
		for _, want := range at.mustShow {
			if want = vars.Replace(want); !strings.Contains(out, want) {
				t.Errorf("attack %q: the output lacks %q", at.name, want)
			}
		}
		if len(at.failed) > 0 && !slices.ContainsFunc(at.failed, func(f string) bool { return strings.Contains(out, f) }) {
			t.Errorf("attack %q: the output shows none of %q", at.name, at.failed)
		}
		e.healthy()
	}
	if n := op.pgConns(); n > 0 {
		t.Errorf("the operator's PostgreSQL socket was reached %d times from a run", n)
	}
}

// bwrapAttacks are the escapes tried from inside bubblewrap.
func bwrapAttacks() []attack {
	return []attack{
		{name: "be root: read /etc/shadow, remount / read-write",
			command: "echo UID=$(id -u); grep CapEff /proc/self/status; cat /etc/shadow; " +
				"mount -o remount,rw / && echo REMOUNTED; touch /usr/ROOTED && echo WROTE_USR; echo END",
			mustNot:  []string{"UID=0\n", "root:", "REMOUNTED", "WROTE_USR"},
			mustShow: []string{"CapEff:\t0000000000000000", "END"}},
		{name: "read the operator's env file outside the data directory",
			command: "cat {ENV_FILE}; ls -d /run/parley-attack-* /home/* /root/* /var/run/* 2>/dev/null | sed 's/^/SEEN /'; echo END",
			mustNot: []string{"operator-db-password", "SEEN "},
			failed:  []string{"No such file or directory"}},
		{name: "reach the operator's PostgreSQL by its unix socket",
			command: "{PSQL} -h {PG_SOCKDIR} -U postgres -d {PG_DB} -c 'select email from users'; echo END",
			mustNot: []string{"you@example.com", "(1 row)"},
			failed:  []string{"No such file or directory"}},
		{name: "reach the server's web port and the model's upstream on the host's loopback",
			command:  "for p in {WEB_PORT} {MODEL_PORT}; do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && echo REACHED $p || echo REFUSED $p; done",
			mustNot:  []string{"REACHED"},
			mustShow: []string{"REFUSED {WEB_PORT}", "REFUSED {MODEL_PORT}"}},
	}
}

// operator is what an operator keeps on the host beside Parley: an env file
// with the database password, readable by every uid (mode 0644), and a
// PostgreSQL socket any local user may connect to (peer or trust
// authentication), here a forwarder to the test's cluster.
type operator struct {
	envFile, sockDir string
	conns            chan struct{}
}

func (o *operator) pgConns() int { return len(o.conns) }

// operatorHost makes the operator's files under /run (else the home).
func operatorHost(t *testing.T, dbURL string) *operator {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "parley-attack-")
	if err != nil {
		home, _ := os.UserHomeDir()
		if dir, err = os.MkdirTemp(home, "parley-attack-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := &operator{envFile: filepath.Join(dir, "parley.env"), sockDir: dir, conns: make(chan struct{}, 1000)}
	if err := os.WriteFile(o.envFile, []byte("DATABASE_URL=postgres://parley:operator-db-password@db/parley\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(mustURL(t, dbURL).Query().Get("host"), ".s.PGSQL.5432")
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, ".s.PGSQL.5432"), 0o777)
	t.Cleanup(func() { ln.Close() })
	go forwardPG(ln, target, o.conns)
	return o
}

// forwardPG passes each connection to ln on to the cluster's socket.
func forwardPG(ln net.Listener, target string, conns chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns <- struct{}{}
		go func() {
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			up, err := (&net.Dialer{}).DialContext(ctx, "unix", target)
			if err != nil {
				fmt.Fprintf(c, "forward: %v", err)
				return
			}
			defer up.Close()
			go io.Copy(up, c)
			io.Copy(c, up)
		}()
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
