package channel

import (
	"debug/elf"
	"fmt"
	"runtime"
)

// CheckBinary returns nil when the file bin can serve as the helper in any
// Linux sandbox of this machine's architecture: a static ELF executable
// (no interpreter, no shared libraries), so that it depends on nothing of
// the image. It does not tell whether bin carries the helper.
func CheckBinary(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("channel helper %s: %w", bin, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390}
	if m, ok := want[runtime.GOARCH]; ok && f.Machine != m {
		return fmt.Errorf("channel helper %s: built for %s, not %s", bin, f.Machine, runtime.GOARCH)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("channel helper %s: dynamically linked (build it with CGO_ENABLED=0)", bin)
		}
	}
	return nil
}
