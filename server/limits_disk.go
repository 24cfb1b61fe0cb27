package server

import (
	"context"
	"net/http"
	"slices"

	"parley/launch"
	"parley/quota"
	"parley/store"
)

// A project's disk quota. Runs write where the file system has no quota
// of its own (the data dir may share Postgres's), so Parley measures what
// a project's directories take (package quota): at every run's start,
// before every prompt while the project is over, and every
// Config.DiskEvery while it has a live run. Over the quota its runs are
// stopped (each run's cgroup killed) with a notice, and prompts are
// refused with the same sentence until files are removed or an admin
// raises the quota. Between two measurements a run can write at most
// what it writes in one period, each file at most the quota
// (Spec.MaxFile) and the server's file size cap.

// newDiskWatcher is the server's disk quota watcher.
func (s *Server) newDiskWatcher() *quota.Watcher {
	return quota.New(quota.Config{Every: s.cfg.DiskEvery, Project: s.diskProject, Live: s.liveProjects,
		Over: s.stopOverQuota, Reserve: s.cfg.DiskReserve, Log: s.log})
}

// WatchDisk measures the projects with a live run until ctx ends and
// stops those over their disk quota.
func (s *Server) WatchDisk(ctx context.Context) error { return s.disk.Run(ctx) }

// diskQuota is the project's quota: its own, else the server's.
func (s *Server) diskQuota(l store.RunLimits) int64 {
	if l.Disk > 0 {
		return l.Disk
	}
	return s.cfg.ProjectDisk
}

// diskProject is what the watcher measures of a project: its directory
// under the data dir (workspace, worktrees, home, CLI config) and the
// directory an admin pointed it at, if any.
func (s *Server) diskProject(ctx context.Context, id int64) (quota.Project, error) {
	p, err := s.st.GetProject(ctx, id)
	if err != nil {
		return quota.Project{}, err
	}
	l, err := s.st.ProjectRunLimits(ctx, id)
	if err != nil {
		return quota.Project{}, err
	}
	q := quota.Project{Dirs: []string{launch.ProjectDir(s.cfg.DataDir, id)}, Quota: s.diskQuota(l)}
	if p.Workspace != "" {
		q.Dirs = append(q.Dirs, p.Workspace)
	}
	return q, nil
}

// liveProjects are the projects with a live run on this replica.
func (s *Server) liveProjects() []int64 {
	if s.sup == nil {
		return nil
	}
	var ids []int64
	for _, sid := range s.sup.Sessions() {
		if r, ok := s.sup.Live(sid); ok && !slices.Contains(ids, r.Spec().ProjectID) {
			ids = append(ids, r.Spec().ProjectID)
		}
	}
	return ids
}

// stopOverQuota stops every run of a project over its quota, each
// session told why first.
func (s *Server) stopOverQuota(_ context.Context, id int64, st quota.Status) {
	for _, sid := range s.sup.Sessions() {
		if r, ok := s.sup.Live(sid); ok && r.Spec().ProjectID == id {
			s.sup.LimitReached(sid, "Claude was stopped. "+st.Sentence())
		}
	}
	s.sup.StopProject(id)
}

// checkDisk refuses a prompt, or a run's start, while the project is over
// its disk quota, with the sentence that says what to do.
func (s *Server) checkDisk(ctx context.Context, projectID int64) error {
	st, err := s.disk.Check(ctx, projectID)
	if err != nil {
		s.log.Warn("measure a project's disk use", "project_id", projectID, "err", err)
		return nil // not measured: the file size cap still holds
	}
	if st.Over() {
		return &httpError{http.StatusForbidden, st.Sentence()}
	}
	return nil
}

// diskCap is the file size cap of the project's runs, its disk quota
// (0 = none), or the refusal while the project is over it
// (launch.Hooks.DiskCap).
func (s *Server) diskCap(ctx context.Context, projectID int64, l store.RunLimits) (int64, error) {
	q := s.diskQuota(l)
	if q == 0 {
		return 0, nil
	}
	return q, s.checkDisk(ctx, projectID)
}
