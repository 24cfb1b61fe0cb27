package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunsWeighLessThanParley: with the default limits, every run of a
// Parley together gets half the CPU weight of a sibling at the default
// (v1 cpu.shares 512 against 1024, v2 cpu.weight 50 against 100), so
// Parley's own threads (hub, asks, answers), which stay in Parley's
// cgroup, go first when the runs fill the CPU (issue 33, item 4).
func TestRunsWeighLessThanParley(t *testing.T) {
	m := manager(t, Defaults)
	checked := 0
	for _, d := range m.Dirs() {
		file, want := "cpu.shares", "512"
		if m.Version() == 2 {
			file, want = "cpu.weight", "50"
		}
		b, err := os.ReadFile(filepath.Join(d, file))
		if os.IsNotExist(err) {
			continue // not the cpu hierarchy
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s/%s = %s, want %s", d, file, got, want)
		}
	}
	if checked == 0 {
		t.Error("no cpu controller among the runs' cgroups")
	}
}
