// Package families holds function families that several rules must agree
// on, so that one cost is attributed to one finding: formatting under a
// logger is logging-cost, not string-formatting; a logger's writes are not
// syscall-per-write.
package families

import "github.com/perfdoctor/perfdoctor/evidence"

var (
	// Loggers is every logging library's family (standard log and slog,
	// logrus, zap, zerolog, klog, glog, go-kit, hclog; on the JVM log4j,
	// logback and SLF4J, java.util.logging).
	Loggers = evidence.FuncPrefix(
		"log.", "log/slog.",
		"github.com/sirupsen/logrus.", "github.com/Sirupsen/logrus.", "go.uber.org/zap", "github.com/rs/zerolog",
		"k8s.io/klog", "github.com/golang/glog.", "github.com/go-kit/log", "github.com/go-kit/kit/log", "github.com/hashicorp/go-hclog.",
		"org.apache.logging.log4j.", "org.apache.log4j.", "ch.qos.logback.", "org.slf4j.", "java.util.logging.",
	)
	// WriteSyscall is a write system call on a stream. UDP sends (WriteTo,
	// WriteMsg) are one per datagram by nature and writev is already
	// batched, so they are not in it: names match exactly.
	WriteSyscall evidence.Matcher = func(fn string) bool {
		switch fn {
		case "internal/poll.(*FD).Write", "syscall.write", "syscall.Write", "golang.org/x/sys/unix.write", "golang.org/x/sys/unix.Write":
			return true
		}
		return false
	}
)
