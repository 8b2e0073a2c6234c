//go:build !unix

package agent

// processCPU falls back to the runtime's estimate of CPU time spent on Go
// code and the runtime where getrusage is unavailable.
func processCPU() (user, sys float64, maxRSS uint64) {
	return readMetric("/cpu/classes/user:cpu-seconds") + readMetric(mGCCPU) + readMetric("/cpu/classes/scavenge/total:cpu-seconds"), 0, 0
}
