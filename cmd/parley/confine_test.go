package main

import (
	"strings"
	"testing"

	"parley/cgroup"
)

func TestParseRunLimits(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    runLimits
		wantErr string
	}{
		{env: nil, want: runLimits{Cgroup: cgroup.Defaults, MaxFile: 1 << 30}},
		{env: map[string]string{"PARLEY_RUN_TASKS": "100", "PARLEY_RUN_MEMORY": "512M", "PARLEY_RUN_CPU_WEIGHT": "20", "PARLEY_RUN_MAX_FILE": "2GiB"},
			want: runLimits{Cgroup: cgroup.Limits{Tasks: 100, Memory: 512 << 20, CPUWeight: 20}, MaxFile: 2 << 30}},
		{env: map[string]string{"PARLEY_RUN_TASKS": "0", "PARLEY_RUN_MEMORY": "0", "PARLEY_RUN_MAX_FILE": "off"},
			want: runLimits{Cgroup: cgroup.Limits{CPUWeight: cgroup.Defaults.CPUWeight}}},
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
	c := config{DataDir: dir, RunLimits: runLimits{MaxFile: 0}}
	err := checkDiskCap(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "PARLEY_RUN_MAX_FILE") {
		t.Errorf("no cap beside the private PostgreSQL: %v, want a refusal naming PARLEY_RUN_MAX_FILE", err)
	}
	c.RunLimits.MaxFile = 1 << 30
	if err := checkDiskCap(t.Context(), c); err != nil {
		t.Errorf("with the default cap: %v", err)
	}
	c.RunLimits.MaxFile, c.DatabaseURL = 0, "postgres://parley@db.example:5432/parley"
	if err := checkDiskCap(t.Context(), c); err != nil {
		t.Errorf("a database on another host: %v", err)
	}
}
