// Package catalog lists every rule perfdoctor runs. A test checks that each
// rule package under rules/ appears here exactly once.
package catalog

import (
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/backlog"
	"github.com/perfdoctor/perfdoctor/rules/compression"
	"github.com/perfdoctor/perfdoctor/rules/connchurn"
	"github.com/perfdoctor/perfdoctor/rules/conntrack"
	"github.com/perfdoctor/perfdoctor/rules/diskwait"
	"github.com/perfdoctor/perfdoctor/rules/downstream"
	"github.com/perfdoctor/perfdoctor/rules/exceptioncost"
	"github.com/perfdoctor/perfdoctor/rules/fdlimit"
	"github.com/perfdoctor/perfdoctor/rules/gclog"
	"github.com/perfdoctor/perfdoctor/rules/gcpause"
	"github.com/perfdoctor/perfdoctor/rules/gcpressure"
	"github.com/perfdoctor/perfdoctor/rules/goroutinechurn"
	"github.com/perfdoctor/perfdoctor/rules/hotfunction"
	"github.com/perfdoctor/perfdoctor/rules/jvmboxing"
	"github.com/perfdoctor/perfdoctor/rules/jvmdeadlock"
	"github.com/perfdoctor/perfdoctor/rules/jvmexplicitgc"
	"github.com/perfdoctor/perfdoctor/rules/jvmflags"
	"github.com/perfdoctor/perfdoctor/rules/jvmgcpause"
	"github.com/perfdoctor/perfdoctor/rules/jvmgcsetup"
	"github.com/perfdoctor/perfdoctor/rules/kernelnet"
	"github.com/perfdoctor/perfdoctor/rules/lockcontention"
	"github.com/perfdoctor/perfdoctor/rules/logcost"
	"github.com/perfdoctor/perfdoctor/rules/memgrowth"
	"github.com/perfdoctor/perfdoctor/rules/oversized"
	"github.com/perfdoctor/perfdoctor/rules/portexhaust"
	"github.com/perfdoctor/perfdoctor/rules/producer"
	"github.com/perfdoctor/perfdoctor/rules/reflectcodec"
	"github.com/perfdoctor/perfdoctor/rules/regexphot"
	"github.com/perfdoctor/perfdoctor/rules/routingcost"
	"github.com/perfdoctor/perfdoctor/rules/scanheap"
	"github.com/perfdoctor/perfdoctor/rules/schedlatency"
	"github.com/perfdoctor/perfdoctor/rules/scheduler"
	"github.com/perfdoctor/perfdoctor/rules/stringfmt"
	"github.com/perfdoctor/perfdoctor/rules/summarycost"
	"github.com/perfdoctor/perfdoctor/rules/syncdisk"
	"github.com/perfdoctor/perfdoctor/rules/syscallwrite"
	"github.com/perfdoctor/perfdoctor/rules/throttling"
)

// All returns the catalog, grouped by area.
func All() []*rules.Rule {
	return []*rules.Rule{
		hotfunction.Rule,
		gcpressure.Rule,
		gclog.Rule,
		scanheap.Rule,
		connchurn.Rule,
		summarycost.Rule,
		producer.Rule,
		reflectcodec.Rule,
		compression.Rule,
		syscallwrite.Rule,
		stringfmt.Rule,
		regexphot.Rule,
		logcost.Rule,
		lockcontention.Rule,
		oversized.Rule,
		memgrowth.Rule,
		scheduler.Rule,
		goroutinechurn.Rule,
		schedlatency.Rule,
		// Operating system and network
		portexhaust.Rule,
		kernelnet.Rule,
		conntrack.Rule,
		backlog.Rule,
		throttling.Rule,
		fdlimit.Rule,
		// Waiting: disk, downstreams, pauses
		syncdisk.Rule,
		diskwait.Rule,
		downstream.Rule,
		gcpause.Rule,
		// JVM
		exceptioncost.Rule,
		routingcost.Rule,
		jvmboxing.Rule,
		jvmgcpause.Rule,
		jvmexplicitgc.Rule,
		jvmgcsetup.Rule,
		jvmdeadlock.Rule,
		jvmflags.Rule,
	}
}

// Lookup finds a rule by ID (case-insensitive) or class slug.
func Lookup(key string) *rules.Rule {
	for _, r := range All() {
		if strings.EqualFold(r.ID, key) || r.Class == key {
			return r
		}
	}
	return nil
}
