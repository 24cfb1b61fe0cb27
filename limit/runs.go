package limit

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

const (
	// RunMemory is what one live claude process takes, measured with the
	// pinned CLI (about 200 MB resident) plus its MCP child.
	RunMemory = 220 << 20
	// headroom is kept for Parley, Postgres and the system: a quarter of
	// the memory, at least 512 MB.
	minHeadroom = 512 << 20
)

// DefaultMaxRuns is the cap on live claude processes this machine can hold:
// the memory Parley may use (the cgroup limit when there is one, else
// MemTotal), less headroom, divided by RunMemory; at least 1.
func DefaultMaxRuns() int {
	return MaxRunsFor(memoryBytes())
}

// MaxRunsFor is DefaultMaxRuns for a machine with mem bytes.
func MaxRunsFor(mem int64) int {
	if mem <= 0 {
		return 4
	}
	usable := mem - max(mem/4, minHeadroom)
	return max(1, int(usable/RunMemory))
}

// memoryBytes is the smaller of the cgroup's memory.max and MemTotal; 0
// when neither is readable.
func memoryBytes() int64 {
	total := memTotal()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			return n
		}
	}
	return total
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
