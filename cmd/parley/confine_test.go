package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/cgroup"
	"parley/runner"
)

func TestParseRunLimits(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    runLimits
		wantErr string
	}{
		{env: nil, want: runLimits{Cgroup: cgroup.Defaults, MaxFile: 1 << 30, ProjectDisk: 10 << 30}},
		{env: map[string]string{"PARLEY_RUN_TASKS": "100", "PARLEY_RUN_MEMORY": "512M", "PARLEY_RUN_CPU_WEIGHT": "20", "PARLEY_RUN_MAX_FILE": "2GiB", "PARLEY_PROJECT_DISK": "50G"},
			want: runLimits{Cgroup: cgroup.Limits{Tasks: 100, Memory: 512 << 20, CPUWeight: 20}, MaxFile: 2 << 30, ProjectDisk: 50 << 30}},
		{env: map[string]string{"PARLEY_RUN_TASKS": "0", "PARLEY_RUN_MEMORY": "0", "PARLEY_RUN_MAX_FILE": "off", "PARLEY_PROJECT_DISK": "off"},
			want: runLimits{Cgroup: cgroup.Limits{CPUWeight: cgroup.Defaults.CPUWeight}}},
		{env: map[string]string{"PARLEY_PROJECT_DISK": "1K"}, wantErr: "PARLEY_PROJECT_DISK"},
		{env: map[string]string{"PARLEY_RUN_TASKS": "-1"}, wantErr: "PARLEY_RUN_TASKS"},
		{env: map[string]string{"PARLEY_RUN_MEMORY": "lots"}, wantErr: "PARLEY_RUN_MEMORY"},
		{env: map[string]string{"PARLEY_RUN_CPU_WEIGHT": "0"}, wantErr: "PARLEY_RUN_CPU_WEIGHT"},
		{env: map[string]string{"PARLEY_RUN_MAX_FILE": "0"}, wantErr: "or off"},
	} {
		got, err := parseRunLimits(func(k string) string { return tc.env[k] })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %+v, %v; want %+v", tc.env, got, err, tc.want)
		}
	}
}

// TestDiskCapOffRefusedBesidePostgres: with no cap on a run's files,
// Parley refuses to start where its data dir holds the private
// PostgreSQL's data, naming the variable; with the default cap it starts.
func TestDiskCapOffRefusedBesidePostgres(t *testing.T) {
	dir := t.TempDir()
	c := config{DataDir: dir, RunLimits: runLimits{MaxFile: 0, ProjectDisk: 10 << 30}}
	err := checkDiskCap(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "PARLEY_RUN_MAX_FILE") {
		t.Errorf("no cap beside the private PostgreSQL: %v, want a refusal naming PARLEY_RUN_MAX_FILE", err)
	}
	c.RunLimits.MaxFile = 1 << 30
	if err := checkDiskCap(t.Context(), c); err != nil {
		t.Errorf("with the default cap: %v", err)
	}
	c.RunLimits.ProjectDisk = 0
	if err := checkDiskCap(t.Context(), c); err == nil || !strings.Contains(err.Error(), "PARLEY_PROJECT_DISK is off") {
		t.Errorf("no project quota beside the private PostgreSQL: %v, want a refusal naming PARLEY_PROJECT_DISK", err)
	}
	c.RunLimits.MaxFile, c.DatabaseURL = 0, "postgres://parley@db.example:5432/parley"
	if err := checkDiskCap(t.Context(), c); err != nil {
		t.Errorf("a database on another host: %v", err)
	}
}

// TestRestartKillsWhatADeadParleyLeft: a Parley died (SIGKILL) while a
// run's setsid daemon lived in the run's cgroup; the next Parley's start
// (confineRuns) kills the daemon and removes the dead one's cgroups.
func TestRestartKillsWhatADeadParleyLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root here")
	}
	probe, err := cgroup.Open(cgroup.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	var bases []string // <own cgroup>/parley in each hierarchy
	for _, d := range probe.Dirs() {
		bases = append(bases, filepath.Dir(d))
	}
	probe.Close()

	dead := exec.Command("sleep", "300") // the Parley that will die
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", dead.Process.Pid))
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	owner := fmt.Sprintf("%d-%s-test", dead.Process.Pid, fields[19])
	mark := fmt.Sprintf("parley-restart-test-%d", os.Getpid())
	run := exec.Command("sh", "-c", `read go; setsid sh -c 'sleep 300' `+mark+` </dev/null >/dev/null 2>&1 &`)
	in, _ := run.StdinPipe()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	for _, b := range bases {
		dir := filepath.Join(b, owner, "run-1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(run.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	in.Write([]byte("go\n"))
	run.Wait()
	dead.Process.Kill()
	dead.Wait()
	// The daemon's shell is between fork and exec for a moment, when its
	// command line can read empty: wait for it to show.
	for deadline := time.Now().Add(5 * time.Second); len(procsWith(mark)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start")
		}
	}

	var rc runner.Config
	closeCgroups := confineRuns(config{RunLimits: runLimits{Cgroup: cgroup.Defaults}}, &rc, slog.New(slog.DiscardHandler))
	defer closeCgroups()
	if rc.Cgroups == nil {
		t.Fatal("no cgroups for the runs")
	}
	if pids := procsWith(mark); len(pids) > 0 {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Errorf("the dead Parley's daemon %v outlived the restart", pids)
	}
	for _, b := range bases {
		if _, err := os.Stat(filepath.Join(b, owner)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dead Parley's cgroup %s is still there: %v", filepath.Join(b, owner), err)
		}
	}
}

// procsWith are the processes whose command line holds mark.
func procsWith(mark string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(d + "/cmdline"); err == nil && strings.Contains(string(b), mark) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}
