// Package jvm008 detects JVM options given twice or deprecated, obsolete
// or removed (finding class jvm-flags).
package jvm008

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM008.
var Rule = &rules.Rule{
	ID:    "JVM008",
	Class: "jvm-flags",
	Doc: rules.Doc{
		Title: "JVM options are duplicated or deprecated",
		Text: `Start scripts accumulate options: a flag given twice silently takes its last
value, which is rarely the one the reader of the script sees first; options
from older JDKs are ignored with a warning (obsolete), refused (removed), or
still honoured for a release or two (deprecated) while doing something
different from what their name promises.`,
		Evidence: `The JVM's command line from a JFR recording (jdk.JVMInformation): -XX
options, -Xmx/-Xms/-Xmn/-Xss and -D properties given more than once, and
-XX options on a list of deprecated, obsolete and removed ones (CMS, ParNew,
PermGen sizes, the pre-JDK 9 GC logging flags, biased locking,
AggressiveOpts and others).`,
		Fix: `Give every option once, in one place; replace retired options with their
successors (-Xlog:gc* for the Print*GC* flags, MaxMetaspaceSize for
MaxPermSize, G1 or ZGC for CMS, MaxRAMPercentage for MaxRAMFraction) or drop
them.`,
		Before:  `java -Xmx2g -XX:+UseConcMarkSweepGC -XX:+PrintGCDetails ... -Xmx4g -jar app.jar`,
		After:   `java -Xmx4g -XX:+UseG1GC -Xlog:gc*:file=gc.log -jar app.jar`,
		Caveats: "Options given in JAVA_TOOL_OPTIONS or a flags file appear in the command line as the JVM saw it.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html#obsolete-java-options"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

// retired maps a -XX option to what became of it.
var retired = map[string]string{
	"UseConcMarkSweepGC":             "CMS was removed in JDK 14: use G1 (the default) or ZGC",
	"CMSInitiatingOccupancyFraction": "CMS was removed in JDK 14",
	"UseCMSInitiatingOccupancyOnly":  "CMS was removed in JDK 14",
	"CMSParallelRemarkEnabled":       "CMS was removed in JDK 14",
	"UseParNewGC":                    "removed in JDK 10",
	"UseParallelOldGC":               "obsolete since JDK 15: -XX:+UseParallelGC includes it",
	"MaxPermSize":                    "PermGen was removed in JDK 8: use MaxMetaspaceSize",
	"PermSize":                       "PermGen was removed in JDK 8: use MetaspaceSize",
	"AggressiveOpts":                 "obsolete since JDK 12",
	"UseBiasedLocking":               "deprecated in JDK 15, obsolete from JDK 18",
	"PrintGCDetails":                 "deprecated since JDK 9: use -Xlog:gc*",
	"PrintGCDateStamps":              "removed in JDK 9: use -Xlog:gc*::time",
	"PrintGCTimeStamps":              "removed in JDK 9: use -Xlog:gc*::uptime",
	"PrintGCApplicationStoppedTime":  "removed in JDK 9: use -Xlog:safepoint",
	"PrintTenuringDistribution":      "removed in JDK 9: use -Xlog:gc+age=trace",
	"UseGCLogFileRotation":           "removed in JDK 9: use -Xlog options filecount and filesize",
	"NumberOfGCLogFiles":             "removed in JDK 9: use -Xlog options filecount and filesize",
	"GCLogFileSize":                  "removed in JDK 9: use -Xlog options filecount and filesize",
	"MaxRAMFraction":                 "deprecated since JDK 10: use MaxRAMPercentage",
	"MinRAMFraction":                 "deprecated since JDK 10: use MinRAMPercentage",
	"InitialRAMFraction":             "deprecated since JDK 10: use InitialRAMPercentage",
	"UseCGroupMemoryLimitForHeap":    "removed in JDK 11: container limits are read by default",
	"UseFastAccessorMethods":         "removed in JDK 9",
	"UseSplitVerifier":               "removed in JDK 8",
	"UseStringCache":                 "removed in JDK 8",
	"ThreadPriorityPolicy":           "values other than 0 and 1 are refused since JDK 9",
}

// optionName names an option for duplicate detection: "-XX:+UseG1GC" and
// "-XX:-UseG1GC" are one option, "-Xmx4g" is "-Xmx", "-Dk=v" is "-Dk".
func optionName(arg string) (name string, xx bool) {
	switch {
	case strings.HasPrefix(arg, "-XX:"):
		n := strings.TrimLeft(arg[4:], "+-")
		n, _, _ = strings.Cut(n, "=")
		return n, true
	case strings.HasPrefix(arg, "-D"):
		n, _, _ := strings.Cut(arg, "=")
		return n, false
	}
	for _, p := range []string{"-Xmx", "-Xms", "-Xmn", "-Xss"} {
		if strings.HasPrefix(arg, p) {
			return p, false
		}
	}
	return "", false
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	if s.JVMArguments == "" {
		return nil
	}
	seen := map[string][]string{}
	var order, old []string
	for _, arg := range strings.Fields(s.JVMArguments) {
		name, xx := optionName(arg)
		if name == "" {
			continue
		}
		if len(seen[name]) == 0 {
			order = append(order, name)
		}
		seen[name] = append(seen[name], arg)
		if why, ok := retired[name]; ok && xx && len(seen[name]) == 1 {
			old = append(old, fmt.Sprintf("-XX:%s (%s)", name, why))
		}
	}
	var dups []string
	for _, name := range order {
		if args := seen[name]; len(args) > 1 {
			dups = append(dups, fmt.Sprintf("%s given %d times (%s; the last wins)", name, len(args), strings.Join(args, " ")))
		}
	}
	if len(dups) == 0 && len(old) == 0 {
		return nil
	}
	sort.Strings(old)
	var parts []string
	if len(dups) > 0 {
		parts = append(parts, fmt.Sprintf("%d duplicated", len(dups)))
	}
	if len(old) > 0 {
		parts = append(parts, fmt.Sprintf("%d deprecated or removed", len(old)))
	}
	f := rules.Finding{
		Severity:    rules.Low,
		Resource:    "cpu",
		ImpactBasis: "not measured: a configuration defect, ranked by severity",
		Summary:     "JVM options: " + strings.Join(parts, ", "),
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
	}
	for _, d := range dups {
		f.Evidence = append(f.Evidence, rules.Text("duplicated", d))
	}
	for _, o := range old {
		f.Evidence = append(f.Evidence, rules.Text("deprecated or removed", o))
	}
	pass.Report(f)
	return nil
}
