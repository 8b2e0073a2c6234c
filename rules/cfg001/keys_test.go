package cfg001

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
)

func TestWhichSettingsSizeAPool(t *testing.T) {
	for name, want := range map[string]bool{
		"--server.tomcat.threads.max":                  true,
		"--spring.datasource.hikari.maximum-pool-size": true,
		"-max-open-conns":                              true,
		"-workers":                                     true,
		"http.maxConnections":                          true,
		"--spring.datasource.hikari.minimum-idle":      false,
		"-max-idle-conns":                              false,
		"--server.tomcat.accept-count":                 false,
		"-search.maxQueueDuration":                     false,
		"-pool-timeout":                                false,
		"-search.disableCache":                         false,
	} {
		if got := isPoolSize(facts.SettingKey(name)); got != want {
			t.Errorf("%s (key %s): pool size %v, want %v", name, facts.SettingKey(name), got, want)
		}
	}
}

func TestWhichSettingsSetAVerboseLogLevel(t *testing.T) {
	for name, want := range map[string]bool{
		"--logging.level.root": true, "-loggerLevel": true, "--log-level": true, "log4j2.level": true,
		"-log.format": false, "-logfile": false,
	} {
		if got := isLogLevel(facts.SettingKey(name)); got != want {
			t.Errorf("%s: log level %v, want %v", name, got, want)
		}
	}
}
