package cfg001

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Thresholds of a server's cache setting, with the measurements behind
// them in Doc.Evidence.
const (
	// minReadShare, mediumReadShare and highReadShare are DISK002's: the
	// serving threads' time in file reads the setting must explain, and
	// its grades.
	minReadShare    = 0.10
	mediumReadShare = 0.25
	highReadShare   = 0.50
	// poolRoom is how many times over the cache must fit in half of the
	// memory the server may use (MariaDB's guidance for a dedicated
	// server is 50-75% of it): below, the setting is not the lever.
	poolRoom = 2
)

// innodbPool is innodb_buffer_pool_size, keyed as facts.SettingKey keys it
// (the command line's --innodb-buffer-pool-size too), and its default.
const (
	innodbPool        = "innodb.buffer.pool.size"
	innodbPoolDefault = 128 << 20
)

// bufferPool reports a MariaDB or MySQL server whose serving threads wait
// for file reads (rules.FileReadWaits, DISK002's reading) while its
// innodb_buffer_pool_size, seen in its option file or on its command
// line, is small beside the memory: the setting is the cause, the read
// waits its symptom.
func bufferPool(pass *rules.Pass, cfg facts.Config) {
	ev := pass.Evidence
	program := cfg.Program
	if ev.SystemEnd != nil && ev.SystemEnd.Process != nil && program == "" {
		program = ev.SystemEnd.Process.Comm
	}
	if program != "mariadbd" && program != "mysqld" {
		return
	}
	set, ok := cfg.Last(innodbPool)
	if !ok {
		return // the default, or a file not read: not judged
	}
	size, ok := mysqlSize(set.Value)
	if !ok || size == 0 {
		return
	}
	s := ev.Settings()
	memory, memoryName := s.MemoryLimit, "the container's memory limit"
	if memory == 0 || s.MemTotal > 0 && s.MemTotal < memory {
		memory, memoryName = s.MemTotal, "the machine's memory"
	}
	if memory == 0 || float64(size)*poolRoom > float64(memory)/2 {
		return // no room to grow it: more memory or fewer reads (an index) is the fix, DISK002's
	}
	st := facts.Get(pass.Facts, facts.PerfStacks)
	if st == nil {
		st = facts.Get(pass.Facts, facts.CPUStacks)
	}
	w := facts.Get(pass.Facts, facts.WorkDone)
	r, ok := rules.FileReadWaits(ev, st, facts.Get(pass.Facts, facts.CPUStacks), w)
	if !ok || r.Waiting == 0 || r.Law.OfWindow < minReadShare {
		return
	}
	law := r.Law
	low, high, mid, capped := law.Range(1)
	half := memory / 2
	name := strings.TrimLeft(set.Name, "-")
	unit := "request"
	if w.Unit != "" {
		unit = w.Unit
	}
	perUnit := ""
	if w.ReadsPerUnit > 0 && w.Unit != "" {
		perUnit = fmt.Sprintf(", %s reads per %s", human.Number(w.ReadsPerUnit), unit)
	}
	f := rules.Finding{
		Severity:    rules.Grade(law.OfWindow, mediumReadShare, highReadShare),
		Resource:    "latency",
		Impact:      mid,
		ImpactRange: &[2]float64{low, high},
		Summary: fmt.Sprintf("%s (%s) gives InnoDB a %s buffer pool, %s of %s: %s's serving threads wait for file reads %s of their time%s",
			set.Written(), place(set), human.Bytes(size), human.Percent(float64(size)/float64(memory)), memoryName, program,
			human.Percent(law.OfWindow), perUnit),
		Evidence: []rules.Fact{
			rules.Text("setting", set.Written()+" ("+set.Where()+")"),
			rules.Bytes("buffer pool", size),
			rules.Bytes(memoryName, memory),
			rules.Share("the serving threads' time in file reads that wait for the device (off the CPU and on it), of all their time", law.OfWindow),
			rules.Share("of their busy time", law.OfBusy),
			rules.Count("serving threads on average (perf's thread IDs)", r.Threads, ""),
			rules.Share("of the read waits, uninterruptible (the device)", r.Device/r.Waiting),
		},
		ImpactBasis: fmt.Sprintf("the process used %.2f of %s cores, and each request holds a serving thread for its reads: they hold its "+
			"serving threads (%s on average) %s of their time, %s of their busy time; a buffer pool that holds the working set removes them",
			w.Cores, human.Number(w.Available), human.Number(r.Threads), human.Percent(law.OfWindow), human.Percent(law.OfBusy)),
		Fix: fmt.Sprintf("Raise %s in %s from %s to hold the working set, the tables and indexes the queries read (SHOW TABLE STATUS: "+
			"Data_length + Index_length), within half of %s (%s) on a server that runs beside others, 50-75%% of it on a dedicated one; "+
			"Innodb_buffer_pool_reads against Innodb_buffer_pool_read_requests in SHOW GLOBAL STATUS counts the misses, and should fall "+
			"near zero. MariaDB 10.2 and later resize the pool online (SET GLOBAL innodb_buffer_pool_size); keep the file's value with it. "+
			"Prove it: perfdoctor verify compares the server started with each size under the same load.",
			name, place(set), set.Value, memoryName, human.Bytes(memory)),
		Example: fmt.Sprintf("%s   # %s\n->\n%s=%s   # the working set, at most half of %s", set.Written(), set.Where(), name, mysqlSizeText(half), memoryName),
		Caveats: []string{
			"The gain assumes the working set fits in the larger pool: the reads of a table larger than the memory stay, and an index that makes each query read fewer pages is then the fix.",
			"A larger buffer pool takes memory from the page cache and the other processes: check what else the machine runs.",
		},
		// The reads' CPU is the setting's: DISK002's claim on the same
		// samples makes its finding this one's symptom.
		Claim: &rules.Claim{Level: rules.LevelConfig, CPU: r.OnCPU},
	}
	if capped {
		f.ImpactBasis += law.CapNote()
	}
	if size < innodbPoolDefault {
		f.Evidence = append(f.Evidence, rules.Bytes("the server's default (128 MiB)", innodbPoolDefault))
	}
	pass.Report(f)
}

// place is where a setting was read, in a few words: its file, or the
// command line.
func place(s facts.Setting) string {
	if s.Source == facts.SourceFile {
		return s.File
	}
	return sourcePlace(s)
}

// mysqlSize reads a MariaDB or MySQL size: bytes, or a number with K, M,
// G, T, P or E (powers of 1024).
func mysqlSize(v string) (uint64, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	mult := uint64(1)
	if i := strings.Index("KMGTPE", strings.ToUpper(v[len(v)-1:])); i >= 0 {
		mult, v = 1<<(10*(i+1)), v[:len(v)-1]
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n < 0 || n*float64(mult) > 1<<62 {
		return 0, false
	}
	return uint64(n * float64(mult)), true
}

// mysqlSizeText writes a size as MariaDB reads it, in whole G or M.
func mysqlSizeText(b uint64) string {
	if b >= 1<<30 {
		return strconv.FormatUint(b>>30, 10) + "G"
	}
	return strconv.FormatUint(max(b>>20, 1), 10) + "M"
}
