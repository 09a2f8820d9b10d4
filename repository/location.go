package repository

import (
	"errors"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// EnvironmentVariable overrides the store location.
const EnvironmentVariable = "FLAMEOX_DATA_DIR"

// Configuration sources of a Location, as failure details report them.
const (
	SourceEnvironment       = "environment_override"
	SourcePlatformDefault   = "platform_default"
	SourceExplicit          = "explicit_directory"
	SourceRescueDestination = "rescue_destination"
)

// Location is where an evidence store lives and how that was configured.
type Location struct {
	// Dir is the absolute, cleaned store directory.
	Dir string
	// Source is one of the Source constants.
	Source string
}

// FromEnvironment returns the configured store location: FLAMEOX_DATA_DIR when it is set
// (a leading ~ is the home directory; a relative value is made absolute), else the
// platform's user data directory (XDG_DATA_HOME or ~/.local/share on Linux). Nothing is
// created.
func FromEnvironment(getenv func(string) string) (Location, error) {
	home := getenv("HOME")
	if d := getenv(EnvironmentVariable); d != "" {
		if d == "~" || strings.HasPrefix(d, "~/") {
			if home == "" {
				return Location{}, errors.New("FLAMEOX_DATA_DIR starts with ~ and HOME is not set")
			}
			d = filepath.Join(home, d[1:])
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return Location{}, err
		}
		return Location{Dir: abs, Source: SourceEnvironment}, nil
	}
	var base string
	switch goruntime.GOOS {
	case "windows":
		base = getenv("LOCALAPPDATA")
		if base == "" && home != "" {
			base = filepath.Join(home, "AppData", "Local")
		}
	case "darwin":
		if home != "" {
			base = filepath.Join(home, "Library", "Application Support")
		}
	default:
		// The XDG Base Directory specification ignores relative values.
		if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
			base = x
		} else if home != "" {
			base = filepath.Join(home, ".local", "share")
		}
	}
	if base == "" {
		return Location{}, errors.New("no user data directory: set FLAMEOX_DATA_DIR or HOME")
	}
	return Location{Dir: filepath.Join(filepath.Clean(base), "flameox"), Source: SourcePlatformDefault}, nil
}
