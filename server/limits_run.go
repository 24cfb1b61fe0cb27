package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"parley/quota"
	"parley/store"
	"parley/views"
)

// A project's run limits (store.RunLimits): the tasks, memory and CPU
// weight of its cgroup, all of its runs together, and its disk quota.
// Empty is the server's value (Config.RunLimits, Config.ProjectDisk). An
// owner may lower a value, never raise it above the server's (or above
// what an admin set); an admin may set any.

// maxRunBytes bounds the sizes typed (1 PiB). Below minRunTasks or
// minRunMemory a project's Claude could not start (measured: the pinned
// CLI holds 22-25 tasks in a run and peaks near 230 MB). A project's
// runs share its limits: 512 tasks hold about 20 live runs, 2 GiB about 8.
const (
	maxRunBytes  = 1 << 50
	minRunTasks  = 128
	minRunMemory = 512 << 20
)

// serverRunLimits are the server's values of what a project's runs hold.
func (s *Server) serverRunLimits() store.RunLimits {
	c := s.cfg.RunLimits
	return store.RunLimits{Tasks: c.Tasks, Memory: c.Memory, CPUWeight: c.CPUWeight, Disk: s.cfg.ProjectDisk}
}

// parseRunLimits reads the run limits of the settings form for project
// id, saved by an admin or an owner; errs names each refused field.
func (s *Server) parseRunLimits(r *http.Request, id int64, admin bool, errs map[string]string) (store.RunLimits, views.RunLimitsForm) {
	f := views.RunLimitsForm{Tasks: strings.TrimSpace(r.PostFormValue("run_tasks")), Memory: strings.TrimSpace(r.PostFormValue("run_memory")),
		CPUWeight: strings.TrimSpace(r.PostFormValue("run_cpu_weight")), Disk: strings.TrimSpace(r.PostFormValue("disk_quota"))}
	stored, err := s.st.ProjectRunLimits(r.Context(), id)
	if err != nil {
		errs["run_tasks"] = "Parley could not read the project's limits; try again."
		return stored, f
	}
	l := parseRunLimitsForm(f, errs)
	checkRunCeiling(l, stored, s.serverRunLimits(), admin, errs)
	return l, f
}

// parseRunLimitsForm reads the typed values.
func parseRunLimitsForm(f views.RunLimitsForm, errs map[string]string) store.RunLimits {
	var l store.RunLimits
	if f.Tasks != "" {
		n, err := strconv.Atoi(f.Tasks)
		if err != nil || n < minRunTasks || n > 1<<22 {
			errs["run_tasks"] = "A whole number of processes and threads of at least 128 (one run of Claude holds about 25), such as 512, or empty for the server's value."
		}
		l.Tasks = n
	}
	if f.CPUWeight != "" {
		n, err := strconv.Atoi(f.CPUWeight)
		if err != nil || n < 1 || n > 10000 {
			errs["run_cpu_weight"] = "A whole number from 1 to 10000, or empty for the server's value."
		}
		l.CPUWeight = n
	}
	var err error
	if l.Memory, err = parseBytes(f.Memory); err != nil || (f.Memory != "" && l.Memory < minRunMemory) {
		errs["run_memory"] = "A size of at least 512M (one Claude process alone takes about 230 MB), such as 2G, or empty for the server's value."
	}
	if l.Disk, err = parseBytes(f.Disk); err != nil || (f.Disk != "" && l.Disk < 1<<20) {
		errs["disk_quota"] = "A size of at least 1M, such as 10G or 500M, or empty for the server's value."
	}
	return l
}

// checkRunCeiling refuses, for an owner, each value above both the
// server's and the one stored: owners lower limits, admins raise them.
func checkRunCeiling(l, stored, server store.RunLimits, admin bool, errs map[string]string) {
	if admin {
		return
	}
	for _, c := range []struct {
		field           string
		v, stored, ceil int64
	}{
		{"run_tasks", int64(l.Tasks), int64(stored.Tasks), int64(server.Tasks)},
		{"run_memory", l.Memory, stored.Memory, server.Memory},
		{"run_cpu_weight", int64(l.CPUWeight), int64(stored.CPUWeight), int64(server.CPUWeight)},
		{"disk_quota", l.Disk, stored.Disk, server.Disk},
	} {
		if errs[c.field] != "" || c.ceil == 0 {
			continue // refused already, or the server sets no limit
		}
		// Empty is the server's value, the ceiling itself.
		if c.v > max(c.ceil, c.stored) {
			errs[c.field] = "Only an admin may set more than the server's value (" + ceilingText(c.field, c.ceil) + "); set less, or ask an admin."
		}
	}
}

// ceilingText says a server value in the field's unit.
func ceilingText(field string, v int64) string {
	if field == "run_memory" || field == "disk_quota" {
		return quota.Bytes(v)
	}
	return strconv.FormatInt(v, 10)
}

// runLimitsView is the settings page's run limits for project p.
func (s *Server) runLimitsView(ctx context.Context, id int64, admin bool) (views.RunLimitsView, error) {
	l, err := s.st.ProjectRunLimits(ctx, id)
	if err != nil {
		return views.RunLimitsView{}, err
	}
	v := views.RunLimitsView{Form: runLimitsForm(l), Server: runLimitsForm(s.serverRunLimits()), Admin: admin}
	// Measured now unless measured within its period (quota.Watcher.Check);
	// one that cannot be measured shows nothing.
	if st, err := s.disk.Check(ctx, id); err == nil && st.Quota > 0 {
		v.Disk, v.DiskOver = st.Sentence(), st.Over()
	}
	return v, nil
}

// runLimitsForm shows stored limits ("" for 0).
func runLimitsForm(l store.RunLimits) views.RunLimitsForm {
	var f views.RunLimitsForm
	if l.Tasks > 0 {
		f.Tasks = strconv.Itoa(l.Tasks)
	}
	if l.CPUWeight > 0 {
		f.CPUWeight = strconv.Itoa(l.CPUWeight)
	}
	f.Memory, f.Disk = formatBytes(l.Memory), formatBytes(l.Disk)
	return f
}

// parseBytes reads a size with an optional binary suffix (512K, 2G,
// 2GiB, 1T); "" is 0.
func parseBytes(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	s := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(v), "B"), "I")
	shift := 0
	if i := strings.IndexAny(s, "KMGT"); i >= 0 && i == len(s)-1 {
		shift = 10 * (strings.IndexByte("KMGT", s[i]) + 1)
		s = s[:i]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > maxRunBytes>>shift {
		return 0, errors.New("not a size")
	}
	return n << shift, nil
}

// formatBytes writes a size as parseBytes reads it, in the largest
// whole unit; "" for 0.
func formatBytes(n int64) string {
	if n == 0 {
		return ""
	}
	for i := 3; i >= 0; i-- {
		if u := int64(1) << (10 * (i + 1)); n%u == 0 {
			return strconv.FormatInt(n/u, 10) + string("KMGT"[i])
		}
	}
	return strconv.FormatInt(n, 10)
}
