//go:build unix

package agent

import (
	"runtime"
	"syscall"
)

// processCPU returns the process's user and system CPU seconds and its
// peak RSS in bytes.
func processCPU() (user, sys float64, maxRSS uint64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, 0
	}
	user = float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6
	sys = float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
	maxRSS = uint64(ru.Maxrss)
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		maxRSS *= 1024 // kilobytes elsewhere, bytes on Darwin
	}
	return user, sys, maxRSS
}
