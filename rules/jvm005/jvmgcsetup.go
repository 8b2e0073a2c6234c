// Package jvm005 detects a JVM collector configured against the
// machine it runs on (finding class jvm-gc-setup).
package jvm005

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM005.
var Rule = &rules.Rule{
	ID:    "JVM005",
	Class: "jvm-gc-setup",
	Doc: rules.Doc{
		Title: "The garbage collector's setup does not fit the CPUs",
		Text: `The serial collector uses one thread for every pause, leaving the other
cores idle while the application waits; the JVM picks it by itself when it
believes it has one CPU or under 1792 MB of memory, which container limits
trigger. The opposite mistake, more parallel or concurrent GC threads than
CPUs, makes the collector's threads fight each other and the application.`,
		Evidence: `From a JFR recording: the collectors and GC thread counts (jdk.GCConfiguration)
against the CPUs the JVM saw (jdk.CPUInformation hardware threads). Reports
the serial collector on 4 or more hardware threads, and parallel or
concurrent GC threads above the hardware threads.`,
		Fix: `Choose the collector explicitly (-XX:+UseG1GC for most services, -XX:+UseZGC
for large heaps and tight latency) and let it size its threads, or set
-XX:ParallelGCThreads and -XX:ConcGCThreads at or below the CPUs the container
gives (-XX:ActiveProcessorCount when the JVM misreads the quota).`,
		Before:  `java -XX:+UseSerialGC -jar app.jar        # on 16 cores`,
		After:   `java -XX:+UseG1GC -jar app.jar`,
		Caveats: "Small single-CPU containers are right to use the serial collector; the finding is for machines with cores to spare.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/gctuning/ergonomics.html"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const manyCPUs = 4

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	g := s.GC
	cpus := s.HWThreads
	if cpus == 0 || g.Young == "" {
		return nil
	}
	var problems []string
	if isSerial(g.Young) || isSerial(g.Old) {
		if cpus >= manyCPUs {
			problems = append(problems, fmt.Sprintf("the serial collector (%s/%s) pauses on one thread while %d hardware threads are available", g.Young, g.Old, cpus))
		}
	}
	if g.ParallelThreads > cpus {
		problems = append(problems, fmt.Sprintf("%d parallel GC threads on %d hardware threads", g.ParallelThreads, cpus))
	}
	if g.ConcThreads > cpus {
		problems = append(problems, fmt.Sprintf("%d concurrent GC threads on %d hardware threads", g.ConcThreads, cpus))
	}
	if len(problems) == 0 {
		return nil
	}
	f := rules.Finding{
		Severity:    rules.Medium,
		Resource:    "latency",
		ImpactBasis: "not measured: a configuration mismatch, ranked by severity",
		Summary:     "GC setup does not fit the CPUs: " + problems[0],
		Evidence: []rules.Fact{
			rules.Text("collectors", g.Young+" / "+g.Old),
			rules.Count("parallel GC threads", float64(g.ParallelThreads), ""),
			rules.Count("concurrent GC threads", float64(g.ConcThreads), ""),
			rules.Count("hardware threads", float64(cpus), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	for _, p := range problems[1:] {
		f.Summary += "; " + p
	}
	pass.Report(f)
	return nil
}

// isSerial matches the serial collector's names in jdk.GCConfiguration.
func isSerial(name string) bool { return name == "DefNew" || name == "SerialOld" || name == "Serial" }
