package failure

import "testing"

func TestFieldName(t *testing.T) {
	for _, tt := range []struct {
		path []any
		want string
	}{
		{nil, ""},
		{Path("limits", "max_input_bytes"), "limits.max_input_bytes"},
		{Path("sources", 0, "format"), "sources[0].format"},
		{Path("sources", int64(2), "path"), "sources[2].path"},
		// A path decoded from JSON carries its indices as float64.
		{[]any{"cases", float64(1), "argv"}, "cases[1].argv"},
		{Path("target", "environment", "MY_VAR"), "target.environment.MY_VAR"},
	} {
		if got := FieldName(tt.path); got != tt.want {
			t.Errorf("FieldName(%v) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
