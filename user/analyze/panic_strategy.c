// SPDX-License-Identifier: GPL-2.0
/*
 * panic_strategy__detect (panic_strategy.h). rustc does not record -C panic in the
 * binary; the panic runtime it links does show in the symbol tables: panic_unwind's
 * own functions (v0 and legacy manglings both spell the crate "12panic_unwind"), or
 * only the runtime entry point __rust_start_panic, which panic_abort provides.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyze/panic_strategy.h"

enum panic_strategy panic_strategy__detect(const char *path, char *why, size_t whylen)
{
	bool unwind = false, start_panic = false, symtab = false;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	snprintf(why, whylen, "cannot read %s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PANIC_STRATEGY_UNKNOWN;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && !unwind && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		symtab = true;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !unwind; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			if (strstr(name, "12panic_unwind"))
				unwind = true;
			else if (sym.st_shndx != SHN_UNDEF && strstr(name, "rust_start_panic"))
				start_panic = true;
		}
	}
	elf_end(elf);
	close(fd);
	if (unwind) {
		snprintf(why, whylen, "it links the panic_unwind runtime");
		return PANIC_STRATEGY_UNWIND;
	}
	if (start_panic) {
		snprintf(why, whylen,
			 "it defines __rust_start_panic without the panic_unwind runtime "
			 "(panic = \"abort\")");
		return PANIC_STRATEGY_ABORT;
	}
	snprintf(why, whylen, "%s",
		 symtab ? "its symbols name no Rust panic runtime" : "it has no symbol table");
	return PANIC_STRATEGY_UNKNOWN;
}
