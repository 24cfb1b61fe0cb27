package server

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/cgroup"
	"parley/runner/fakeapi"
	"parley/store"
	"parley/views"
)

// TestCheckRunCeiling: an owner may lower a project's run limits and
// keep what an admin set, never go above both; an admin may set any.
func TestCheckRunCeiling(t *testing.T) {
	server := store.RunLimits{Tasks: 512, Memory: 2 << 30, CPUWeight: 50, Disk: 10 << 30}
	for _, tc := range []struct {
		name          string
		set, stored   store.RunLimits
		admin         bool
		refusedFields []string
	}{
		{name: "owner lowers", set: store.RunLimits{Tasks: 64, Memory: 256 << 20, CPUWeight: 10, Disk: 50 << 20}},
		{name: "owner at the server's values", set: server},
		{name: "owner raises every value", set: store.RunLimits{Tasks: 513, Memory: 3 << 30, CPUWeight: 100, Disk: 11 << 30},
			refusedFields: []string{"disk_quota", "run_cpu_weight", "run_memory", "run_tasks"}},
		{name: "admin raises every value", admin: true, set: store.RunLimits{Tasks: 4096, Memory: 8 << 30, CPUWeight: 400, Disk: 100 << 30}},
		{name: "owner keeps an admin's raise", stored: store.RunLimits{Disk: 100 << 30}, set: store.RunLimits{Disk: 100 << 30}},
		{name: "owner goes past an admin's raise", stored: store.RunLimits{Disk: 100 << 30}, set: store.RunLimits{Disk: 101 << 30},
			refusedFields: []string{"disk_quota"}},
		{name: "owner empties (the server's value)", stored: store.RunLimits{Tasks: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := map[string]string{}
			checkRunCeiling(tc.set, tc.stored, server, tc.admin, errs)
			var got []string
			for f, msg := range errs {
				got = append(got, f)
				if !strings.Contains(msg, "Only an admin may set more than the server's value") {
					t.Errorf("%s: %q", f, msg)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.refusedFields, got); diff != "" {
				t.Errorf("refused fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRunLimitsForm(t *testing.T) {
	errs := map[string]string{}
	got := parseRunLimitsForm(views.RunLimitsForm{Tasks: "200", Memory: "512M", CPUWeight: "20", Disk: "10GiB"}, errs)
	if want := (store.RunLimits{Tasks: 200, Memory: 512 << 20, CPUWeight: 20, Disk: 10 << 30}); got != want || len(errs) > 0 {
		t.Errorf("parsed %+v %v, want %+v", got, errs, want)
	}
	if f := runLimitsForm(got); f != (views.RunLimitsForm{Tasks: "200", Memory: "512M", CPUWeight: "20", Disk: "10G"}) {
		t.Errorf("shown as %+v", f)
	}
	parseRunLimitsForm(views.RunLimitsForm{Tasks: "64", Memory: "lots", CPUWeight: "20000", Disk: "1K"}, errs)
	if len(errs) != 4 {
		t.Errorf("refused %v, want all four fields", errs)
	}
}

// TestSettingsRunLimits: through the settings form, an owner cannot
// raise a project's limits above the server's, an admin can, and the
// page shows what is stored.
func TestSettingsRunLimits(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	e.srv.cfg.RunLimits, e.srv.cfg.ProjectDisk = cgroup.Limits{Tasks: 512, Memory: 2 << 30, CPUWeight: 50}, 10<<30
	owner := e.member("owner@example.com", "Owner", roleOwner)
	admin := e.addUser("admin@example.com", "Admin", true)
	path := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings"
	form := url.Values{"permission_mode": {"default"}, "run_tasks": {"1024"}, "run_memory": {"4G"}, "disk_quota": {"50M"}}
	resp := e.postAs(owner, path, form)
	if body := readAll(resp); resp.StatusCode != 400 || !strings.Contains(body, "Only an admin may set more than the server&#39;s value (2 GiB)") {
		t.Fatalf("an owner raising the limits: %d %.2000q; want 400 naming the server's value", resp.StatusCode, body)
	}
	if l, _ := e.st.ProjectRunLimits(t.Context(), e.project.ID); l != (store.RunLimits{}) {
		t.Errorf("an owner's refused limits were stored: %+v", l)
	}
	form.Del(csrfField) // the owner's
	if resp := e.postAs(admin, path, form); resp.StatusCode != 303 {
		t.Fatalf("an admin raising the limits: %d %q; want 303", resp.StatusCode, readAll(resp))
	}
	if l, _ := e.st.ProjectRunLimits(t.Context(), e.project.ID); l != (store.RunLimits{Tasks: 1024, Memory: 4 << 30, Disk: 50 << 20}) {
		t.Errorf("the admin's limits: %+v", l)
	}
	form.Set("run_tasks", "200")
	form.Del(csrfField)
	if resp := e.postAs(owner, path, form); resp.StatusCode != 303 {
		t.Fatalf("an owner keeping the admin's memory and lowering tasks: %d %.500q; want 303", resp.StatusCode, readAll(resp))
	}
	if err := os.MkdirAll(WorkspaceDir(e.dataDir, e.project), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(WorkspaceDir(e.dataDir, e.project), "data"), make([]byte, 60<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	body := e.getAs(owner, path)
	for _, want := range []string{`id="run_tasks" name="run_tasks" min="128" value="200"`, `value="4G"`, `value="50M"`, "Server&#39;s value: 512.",
		`role="alert" id="disk-status">This project&#39;s files take 60.`, "more than its disk quota of 50 MiB"} {
		if !strings.Contains(body, want) {
			t.Errorf("settings page lacks %s", want)
		}
	}
}
