package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RunLimits are what a project's runs may hold, together: the tasks,
// memory and CPU weight of the project's cgroup, and the disk its files
// may take. Zero means the server's value.
type RunLimits struct {
	Tasks     int   `db:"run_tasks"`      // processes and threads
	Memory    int64 `db:"run_memory"`     // bytes
	CPUWeight int   `db:"run_cpu_weight"` // 1-10000
	Disk      int64 `db:"disk_quota"`     // bytes
}

// ProjectRunLimits returns the project's run limits, or ErrNotFound.
func (s *Store) ProjectRunLimits(ctx context.Context, projectID int64) (RunLimits, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT run_tasks, run_memory, run_cpu_weight, disk_quota FROM projects WHERE id = $1`, projectID)
	l, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[RunLimits])
	if err != nil {
		return RunLimits{}, fmt.Errorf("run limits of project %d: %w", projectID, notFound(err))
	}
	return l, nil
}

// SetProjectRunLimits stores the project's run limits.
func (s *Store) SetProjectRunLimits(ctx context.Context, projectID int64, l RunLimits) error {
	return s.updateProject(ctx, "set run limits", projectID, `
		UPDATE projects SET run_tasks = $2, run_memory = $3, run_cpu_weight = $4, disk_quota = $5, updated_at = now()
		WHERE id = $1`, l.Tasks, l.Memory, l.CPUWeight, l.Disk)
}
