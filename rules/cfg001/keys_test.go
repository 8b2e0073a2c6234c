package cfg001

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
)

func TestWhichSettingsSetAVerboseLogLevel(t *testing.T) {
	for name, want := range map[string]bool{
		"--logging.level.root": true, "-loggerLevel": true, "--log-level": true, "log4j2.level": true,
		"-log.format": false, "-logfile": false, "-v": true, "-vmodule": false,
	} {
		if got := isLogLevel(facts.SettingKey(name)); got != want {
			t.Errorf("%s: log level %v, want %v", name, got, want)
		}
	}
}
