// Command pushsvc is a small service for tests that profiles itself with
// Pyroscope's own Go client (pyroscope-go) and pushes the profiles to a
// server: -work alloc spends its CPU allocating short-lived garbage (the
// planted fault), -work light computes a little and sleeps. It runs for
// -for and exits after the client's last upload.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/grafana/pyroscope-go"
)

func main() {
	server := flag.String("server", "", "Pyroscope server URL")
	service := flag.String("service", "", "application name")
	instance := flag.String("instance", "", "instance label")
	work := flag.String("work", "light", "alloc or light")
	dur := flag.Duration("for", 3*time.Second, "how long to run")
	flag.Parse()
	if *server == "" || *service == "" {
		fmt.Fprintln(os.Stderr, "pushsvc: -server and -service are required")
		os.Exit(2)
	}
	runtime.SetMutexProfileFraction(5)
	runtime.SetBlockProfileRate(int(time.Millisecond))
	prof, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: *service,
		ServerAddress:   *server,
		Tags:            map[string]string{"instance": *instance},
		UploadRate:      time.Second,
		ProfileTypes: []pyroscope.ProfileType{pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
			pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace, pyroscope.ProfileMutexCount, pyroscope.ProfileMutexDuration,
			pyroscope.ProfileBlockCount, pyroscope.ProfileBlockDuration},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushsvc:", err)
		os.Exit(1)
	}
	deadline := time.Now().Add(*dur)
	var sink int
	for time.Now().Before(deadline) {
		switch *work {
		case "alloc":
			sink += buildGarbage()
		default:
			sink += hashSome()
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := prof.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pushsvc: stopping the profiler:", err)
		os.Exit(1)
	}
	fmt.Println(sink & 1)
}

// buildGarbage allocates many small short-lived objects: the collector's
// work, not the program's, dominates its CPU.
//
//go:noinline
func buildGarbage() int {
	n := 0
	for i := 0; i < 2000; i++ {
		b := make([]byte, 64+i%512)
		m := map[int]string{i: string(b[:8])}
		n += len(m) + len(b)
	}
	return n
}

//go:noinline
func hashSome() int {
	var buf [4096]byte
	sum := sha256.Sum256(buf[:])
	for i := 0; i < 20000; i++ { // a few milliseconds of CPU per 20 ms nap
		sum = sha256.Sum256(sum[:])
	}
	return int(sum[0])
}
