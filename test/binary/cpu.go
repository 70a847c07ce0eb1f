package binary

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUTicks is the CPU time, user and system, that process pid has used so far, in
// clock ticks, or -1 once it cannot be read (/proc/PID/stat, fields 14 and 15). A
// test waiting on a process it started counts a change as progress: a process that
// starts slowly on a loaded machine may write nothing for a while, but it runs.
func CPUTicks(pid int) int64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The fields after the command name, which is in parentheses, start at the third.
	_, rest, _ := bytes.Cut(stat, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	system, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return user + system
}
