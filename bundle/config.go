package bundle

// ConfigFilesFile holds the configuration files a known server's command
// line names (ConfigFiles), credentials redacted.
const ConfigFilesFile = "config.json"

// Bounds on what ReadConfigFiles keeps of a server's configuration: a
// file's first MaxConfigFileBytes, at most MaxConfigFiles files.
const (
	MaxConfigFileBytes = 256 << 10
	MaxConfigFiles     = 4
)

// ConfigFiles are the configuration files of a known server (MariaDB,
// PostgreSQL, PgBouncer, nginx...) as the process's command line names
// them, or as the server reads them by default from the data directory
// its command line names, read at the start of the window through the
// process's root and working directory. Only the files named are read:
// no include, password or user list file they point to.
type ConfigFiles struct {
	// Program is the server as recognised ("mariadbd", "postgres",
	// "pgbouncer", "nginx", "haproxy", "php-fpm", "apache2", "redis-server").
	Program string `json:"program"`
	PID     int    `json:"pid,omitempty"`
	// ConfigFiles are the files, in the order the server reads them (a
	// later one's setting overrides an earlier one's).
	Files []ConfigFile `json:"config_files"`
	// Note says what could not be looked for ("redis-server rewrote its
	// command line: the configuration file it was started with is not
	// named").
	Note string `json:"note,omitempty"`
}

// ConfigFile is one configuration file as read.
type ConfigFile struct {
	// Path is the file as the process sees it (absolute, resolved against
	// its working directory when the command line gave it relative).
	Path string `json:"path"`
	// Named says how it was found: the argument that names it
	// ("--defaults-file", "-c", "config_file", "argument") or "default"
	// for a file the server reads from its data directory
	// (postgresql.conf under -D).
	Named string `json:"named"`
	// Format is the syntax to read it with: "mysql", "postgresql", "ini"
	// (PgBouncer, php-fpm), "redis", "nginx", "haproxy", "apache".
	Format string `json:"format"`
	// Size is the file's size in bytes; Content its first
	// MaxConfigFileBytes (Truncated when the file is larger), with the
	// values of credential-like keys replaced (Redacted counts them).
	Size      int64  `json:"size,omitempty"`
	Content   string `json:"content,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	Redacted  int    `json:"redacted,omitempty"`
	// Error says why the file could not be read (missing, not permitted,
	// not a regular file); Content is then empty.
	Error string `json:"error,omitempty"`
}
