package memory

import (
	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/providers"
)

var collectors = []providers.Collector{
	providers.Collect(providers.CollectorSpec[gen.NodeHeapProfileProvider]{Kind: "node-heap-profile", File: "profile.heapprofile",
		Admit: func(cases []providers.Case) (*providers.Executable, error) {
			return nil, providers.RequireArgv0(cases, "node-heap-profile", "a Node.js interpreter (node)", func(base string) bool {
				return base == "node" || base == "nodejs"
			})
		},
		Command: func(_ *gen.NodeHeapProfileProvider, _ *providers.Executable, c providers.Case, dir string) []string {
			argv := []string{c.Argv[0], "--heap-prof", "--heap-prof-dir=" + dir, "--heap-prof-name=profile.heapprofile"}
			return append(argv, c.Argv[1:]...)
		}}),
}
