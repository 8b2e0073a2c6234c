package cfg001_test

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

const (
	tinyPool     = "../../corpus/native-mariadb-buffer-pool-tiny/bad"
	missingIndex = "../../corpus/native-mariadb-missing-index/bad"
)

// withPool is the MariaDB bundle at dir with its option file saying
// innodb_buffer_pool_size=size ("" for no option file read).
func withPool(t *testing.T, dir, size string) rules.Result {
	t.Helper()
	ev, _ := ruletest.Diagnose(t, dir, nil)
	var files *bundle.ConfigFiles
	if size != "" {
		files = &bundle.ConfigFiles{Program: "mariadbd", Files: []bundle.ConfigFile{{Path: "/w/bad/my.cnf", Named: "--defaults-file", Format: "mysql",
			Content: "[mariadbd]\ndatadir=/w/bad/data\nport=3306\ninnodb_buffer_pool_size=" + size + "\n"}}}
	}
	ev = ev.Derive().ConfigFiles(files).Evidence()
	return rules.Run(facts.New(ev), catalog.All())
}

func find(fs []rules.Finding, rule string) *rules.Finding {
	for i := range fs {
		if fs[i].Rule == rule {
			return &fs[i]
		}
	}
	return nil
}

// MariaDB with a 6 MiB buffer pool under a 345 MB table: its option file's
// setting is the top finding, DISK002's read waits its symptom, at
// DISK002's estimate (2.11x for 2.32x measured).
func TestBufferPoolTooSmall(t *testing.T) {
	res := withPool(t, tinyPool, "6M")
	if len(res.Findings) == 0 {
		t.Fatal("no finding")
	}
	top := res.Findings[0]
	if top.Rule != "CFG001" || top.Severity < rules.Medium || !strings.Contains(top.Summary, "innodb_buffer_pool_size=6M (/w/bad/my.cnf)") {
		t.Fatalf("top %s %s: %s", top.Rule, top.Severity, top.Summary)
	}
	disk := find(res.Findings, "DISK002")
	if disk == nil || disk.CausedBy != top.ID {
		t.Fatalf("DISK002 is not CFG001's symptom: %+v", disk)
	}
	if !strings.Contains(disk.Summary, "innodb_buffer_pool_size=6M in /w/bad/my.cnf") {
		t.Errorf("DISK002 does not state the value: %s", disk.Summary)
	}
	if top.Impact != disk.Impact || *top.ImpactRange != *disk.ImpactRange {
		t.Errorf("CFG001 %v %v, DISK002 %v %v: one reading, one estimate", top.Impact, *top.ImpactRange, disk.Impact, *disk.ImpactRange)
	}
	if !strings.Contains(top.Example, "innodb_buffer_pool_size=6M") || !strings.Contains(top.Fix, "from 6M") {
		t.Errorf("fix %q example %q", top.Fix, top.Example)
	}
}

// Where CFG001 must stay silent: the setting unseen (DISK002 alone names
// it, without a value), a pool with no room to grow beside the memory
// (more memory or an index is the fix), and a pool that holds the working
// set (MariaDB's missing-index bundle: its reads hit the pool, no read
// waits).
func TestBufferPoolSilent(t *testing.T) {
	for name, c := range map[string]struct {
		dir, size string
		disk      bool
	}{
		"no option file read":       {tinyPool, "", true},
		"a pool of half the memory": {tinyPool, "12G", true},
		"the working set held":      {missingIndex, "128M", false},
	} {
		res := withPool(t, c.dir, c.size)
		if f := find(res.Findings, "CFG001"); f != nil {
			t.Errorf("%s: %s %s", name, f.Severity, f.Summary)
		}
		disk := find(res.Findings, "DISK002")
		if (disk != nil) != c.disk {
			t.Errorf("%s: DISK002 %v", name, disk)
		}
		if disk != nil && disk.CausedBy != "" {
			t.Errorf("%s: DISK002 caused by %s", name, disk.CausedBy)
		}
		if disk != nil && c.size == "" && (!strings.Contains(disk.Summary, "(innodb_buffer_pool_size)") || strings.Contains(disk.Summary, "=")) {
			t.Errorf("%s: DISK002 %s", name, disk.Summary)
		}
	}
}
