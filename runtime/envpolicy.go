package runtime

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// blockedEnvironment are override names refused by policy (compared case-insensitively):
// loader, interpreter-startup and tool-hook variables that change what a target runs.
var blockedEnvironment = map[string]bool{
	"BASH_ENV": true, "CDPATH": true, "ENV": true, "GIT_ASKPASS": true, "LD_LIBRARY_PATH": true,
	"LD_PRELOAD": true, "PYTHONHOME": true, "PYTHONPATH": true, "SSH_ASKPASS": true,
	"JAVA_TOOL_OPTIONS": true, "NODE_EXTRA_CA_CERTS": true, "NODE_OPTIONS": true, "PERL5LIB": true,
	"PERL5OPT": true, "RUBYLIB": true, "RUBYOPT": true, "GDBINIT": true, "GDBHISTFILE": true,
	"PYTHONSTARTUP": true,
}

// blockedPrefixes are refused name prefixes.
var blockedPrefixes = []string{"DYLD_", "GDB_", "GIT_CONFIG_", "LD_", "LLDB_"}

// credentialName matches names that carry credentials.
var credentialName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|_)(?:TOKEN|PASSWORD|PASSWD|SECRET|KEY|CREDENTIALS?|COOKIES?)(?:_|$)`)
})

// environmentBlocked reports whether an override of name (with value) is refused by policy.
// GIT_CONFIG_GLOBAL set to the null device and GIT_CONFIG_NOSYSTEM=1 are allowed: they
// only disable configuration.
func environmentBlocked(name, value string) bool {
	upper := strings.ToUpper(name)
	if upper == "GIT_CONFIG_GLOBAL" && value == os.DevNull || upper == "GIT_CONFIG_NOSYSTEM" && value == "1" {
		return false
	}
	if blockedEnvironment[upper] || credentialName().MatchString(upper) {
		return true
	}
	for _, p := range blockedPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	return false
}
