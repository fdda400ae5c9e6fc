// SPDX-License-Identifier: GPL-2.0
#include "analyze/target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <elfutils/libdwelf.h>

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc, (void)debuginfo_file_name;
	return -1;
}

static int no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		  char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	return -1;
}

/* Does the file behind fd carry this build-id (or, without one, this CRC)? */
static bool debug_file_matches(int fd, const unsigned char *id, int id_len, GElf_Word crc)
{
	if (id_len > 0) {
		Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *bits = NULL;
		ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
		bool same = n == id_len && memcmp(bits, id, (size_t)n) == 0;
		if (elf)
			elf_end(elf);
		return same;
	}
	uLong c = crc32(0L, Z_NULL, 0);
	unsigned char buf[65536];
	ssize_t n;
	if (lseek(fd, 0, SEEK_SET) != 0)
		return false;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	lseek(fd, 0, SEEK_SET);
	return n == 0 && (GElf_Word)c == crc;
}

static int open_matching(const char *path, const char *self, const unsigned char *id, int id_len,
			 GElf_Word crc, char **found)
{
	if (self && strcmp(path, self) == 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!debug_file_matches(fd, id, id_len, crc)) {
		close(fd);
		return -1;
	}
	*found = strdup(path);
	return fd;
}

/*
 * Separate debuginfo, looked up where libdwfl's dwfl_standard_find_debuginfo looks:
 * /usr/lib/debug/.build-id/xx/yyyy.debug, then the .gnu_debuglink name next to the
 * binary, in .debug/ and under /usr/lib/debug. Written here because elfutils
 * 0.188's standard callback dlopen()s libdebuginfod (curl, TLS: ~8 MiB resident, and
 * network access from a root process) on first use, configured or not. A candidate
 * whose build-id (or, without one, CRC) does not match is skipped.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	char path[PATH_MAX + 64], dir[PATH_MAX];
	int fd;

	(void)userdata, (void)modname, (void)base;
	if (id_len > 1 && id_len <= 64) {
		int at = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (int i = 1; i < id_len; i++)
			at += snprintf(path + at, sizeof(path) - (size_t)at, "%02x", id[i]);
		snprintf(path + at, sizeof(path) - (size_t)at, ".debug");
		if ((fd = open_matching(path, file_name, id, id_len, 0, debuginfo_file_name)) >= 0)
			return fd;
	}
	if (!debuglink_file || !file_name || strchr(debuglink_file, '/'))
		return -1;
	snprintf(dir, sizeof(dir), "%s", file_name);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	const char *fmts[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		if (i == 2 && dir[0] != '/')
			continue;
		snprintf(path, sizeof(path), fmts[i], dir, debuglink_file);
		if ((fd = open_matching(path, file_name, id_len > 0 ? id : NULL,
					id_len > 0 ? id_len : 0, debuglink_crc,
					debuginfo_file_name)) >= 0)
			return fd;
	}
	return -1;
}

int target__find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			   const char *file_name, const char *debuglink_file,
			   GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
			      debuglink_crc, debuginfo_file_name);
}

static const Dwfl_Callbacks search_callbacks = {
    .find_elf = no_elf, /* the file is always reported with its descriptor */
    .find_debuginfo = find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static const Dwfl_Callbacks local_callbacks = {
    .find_elf = no_elf,
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static int fail(char *err, size_t errlen, int ret, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	return ret;
}

static void read_debuglink(struct target *t)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(t->elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(t->elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(t->elf, shstrndx, sh.sh_name);
		if (!name || sh.sh_type == SHT_NOBITS)
			continue;
		if (strcmp(name, ".gnu_debuglink") == 0) {
			Elf_Data *d = elf_getdata(scn, NULL);
			if (d && d->d_buf && d->d_size > 0) {
				size_t n = strnlen(d->d_buf, d->d_size);
				if (n < d->d_size && n < sizeof(t->debuglink))
					memcpy(t->debuglink, d->d_buf, n + 1);
			}
		}
	}
}

static uint64_t section_size(Elf *elf, const char *wanted)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, wanted) != 0)
			continue;
		GElf_Chdr ch;
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			return ch.ch_size;
		return sh.sh_size;
	}
	return 0;
}

int target__open_fd(struct target *t, int fd, const char *name, const struct target_opts *o,
		    char *err, size_t errlen)
{
	const char *shown = t->display[0] ? t->display : name;

	t->fd = fd;
	if (!t->path[0])
		snprintf(t->path, sizeof(t->path), "%s", name);
	if (!t->search_path[0])
		snprintf(t->search_path, sizeof(t->search_path), "%s", t->path);
	if (!t->display[0])
		snprintf(t->display, sizeof(t->display), "%s", name);

	struct stat st;
	if (fstat(fd, &st))
		return fail(err, errlen, -errno, "cannot stat %s: %s", shown, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, -ENOEXEC, "%s is not a regular file%s", shown, "");
	if (st.st_size < (off_t)sizeof(Elf64_Ehdr))
		return fail(err, errlen, -ENOEXEC,
			    "%s is not an ELF file (%s: shorter than an ELF header)", shown,
			    st.st_size ? "truncated" : "empty");

	elf_version(EV_CURRENT);
	t->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!t->elf || elf_kind(t->elf) != ELF_K_ELF)
		return fail(err, errlen, -ENOEXEC, "%s is not an ELF file (%s)", shown,
			    t->elf ? "bad magic" : elf_errmsg(-1));
	if (!gelf_getehdr(t->elf, &t->ehdr))
		return fail(err, errlen, -ENOEXEC, "%s: corrupt ELF header: %s", shown,
			    elf_errmsg(-1));
	if (t->ehdr.e_ident[EI_CLASS] != ELFCLASS64)
		return fail(err, errlen, -ENOEXEC,
			    "%s: a 32-bit ELF file%s; asyncbpf supports 64-bit targets", shown, "");
	if (t->ehdr.e_type != ET_EXEC && t->ehdr.e_type != ET_DYN)
		return fail(err, errlen, -ENOEXEC,
			    "%s: not an executable or shared object (ELF type %s)", shown,
			    t->ehdr.e_type == ET_REL ? "relocatable" : "core/other");
	t->pie = t->ehdr.e_type == ET_DYN;

	size_t nr_phdrs;
	if (elf_getphdrnum(t->elf, &nr_phdrs))
		return fail(err, errlen, -ENOEXEC, "%s: corrupt program headers: %s", shown,
			    elf_errmsg(-1));
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(t->elf, (int)i, &ph))
			return fail(err, errlen, -ENOEXEC, "%s: corrupt program header: %s", shown,
				    elf_errmsg(-1));
		if (ph.p_type != PT_LOAD || t->nr_segs >= TARGET_MAX_SEGMENTS)
			continue;
		if (ph.p_offset > (uint64_t)st.st_size ||
		    ph.p_filesz > (uint64_t)st.st_size - ph.p_offset)
			return fail(err, errlen, -ENOEXEC,
				    "%s: truncated or corrupt: a PT_LOAD segment lies beyond the "
				    "end of the file%s",
				    shown, "");
		t->segs[t->nr_segs++] = (struct load_segment){
		    .vaddr = ph.p_vaddr,
		    .memsz = ph.p_memsz,
		    .filesz = ph.p_filesz,
		    .offset = ph.p_offset,
		    .flags = ph.p_flags,
		};
	}
	read_debuglink(t);

	t->dwfl = dwfl_begin(o && !o->search_debuginfo ? &local_callbacks : &search_callbacks);
	if (!t->dwfl)
		return fail(err, errlen, -ENOMEM, "%s: libdwfl: %s", shown, dwfl_errmsg(-1));
	int dfd = dup(fd);
	if (dfd < 0)
		return fail(err, errlen, -errno, "%s: dup: %s", shown, strerror(errno));
	dwfl_report_begin(t->dwfl);
	/* dwfl looks for debuglink targets next to this name, so give the real path */
	t->module = dwfl_report_offline(t->dwfl, t->display, t->search_path, dfd);
	if (!t->module) {
		close(dfd);
		return fail(err, errlen, -ENOEXEC, "%s: libdwfl cannot read it: %s", shown,
			    dwfl_errmsg(-1));
	}
	dwfl_report_end(t->dwfl, NULL, NULL);

	/* libdw's own addresses are link-time ones; only dwfl_module_* results
	 * carry the bias (offline PIE modules are placed above a red zone) */
	t->dwarf = dwfl_module_getdwarf(t->module, &t->bias);
	if (!t->dwarf)
		dwfl_module_getelf(t->module, &t->bias);
	const char *mainfile = NULL, *debugfile = NULL;
	dwfl_module_info(t->module, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	if (t->dwarf)
		t->debuginfo_path = debugfile ? debugfile : t->path;
	if (t->dwarf)
		t->debug_info_size = section_size(dwarf_getelf(t->dwarf), ".debug_info");

	const unsigned char *bits = NULL;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(t->module, &bits, &vaddr);
	if (n > 0 && n <= 64)
		for (int i = 0; i < n; i++)
			snprintf(t->build_id + 2 * i, 3, "%02x", bits[i]);
	return 0;
}

int target__open_path(struct target *t, const char *path, const struct target_opts *o, char *err,
		      size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	snprintf(t->display, sizeof(t->display), "%s", path);
	snprintf(t->path, sizeof(t->path), "%s", path);
	snprintf(t->search_path, sizeof(t->search_path), "%s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return fail(err, errlen, -ENOENT, "%s: no such file%s", path, "");
		if (e == EACCES || e == EPERM)
			return fail(err, errlen, -EACCES,
				    "cannot read %s: %s (check its permissions, or run as root)",
				    path, strerror(e));
		return fail(err, errlen, -e, "cannot open %s: %s", path, strerror(e));
	}
	return target__open_fd(t, fd, path, o, err, errlen);
}

int target__open_pid(struct target *t, pid_t pid, const struct target_opts *o, char *err,
		     size_t errlen)
{
	char proc[64], link[PATH_MAX];

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (pid <= 0) {
		snprintf(err, errlen, "invalid PID %d", (int)pid);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (access(proc, F_OK)) {
		snprintf(err, errlen, "no process with PID %d (it may have exited)", (int)pid);
		return -ESRCH;
	}
	snprintf(proc, sizeof(proc), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(proc, link, sizeof(link) - 1);
	if (n < 0) {
		int e = errno;
		if (e == ENOENT) {
			snprintf(err, errlen,
				 "PID %d has no executable (a kernel thread or a zombie)",
				 (int)pid);
			return -ENOENT;
		}
		snprintf(err, errlen,
			 "cannot read %s: %s (the process belongs to another user: run as root)",
			 proc, strerror(e));
		return e == EACCES || e == EPERM ? -EACCES : -e;
	}
	link[n] = '\0';
	snprintf(t->display, sizeof(t->display), "%s", link);
	snprintf(t->path, sizeof(t->path), "%s", proc);
	/* the path as the target sees it, from our mount namespace */
	int len =
	    snprintf(t->search_path, sizeof(t->search_path), "/proc/%d/root%s", (int)pid, link);
	if (len < 0 || (size_t)len >= sizeof(t->search_path) || access(t->search_path, R_OK))
		snprintf(t->search_path, sizeof(t->search_path), "%s", proc);

	int fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open %s (%s): %s%s", proc, link, strerror(e),
			 e == EACCES || e == EPERM ? " (run as root)" : "");
		return e == EACCES || e == EPERM ? -EACCES : -e;
	}
	return target__open_fd(t, fd, link, o, err, errlen);
}

void target__close(struct target *t)
{
	if (t->relocs) {
		u64_map__free(t->relocs);
		free(t->relocs);
		t->relocs = NULL;
	}
	t->relocs_read = false;
	if (t->dwfl)
		dwfl_end(t->dwfl);
	if (t->elf)
		elf_end(t->elf);
	if (t->fd >= 0)
		close(t->fd);
	t->dwfl = NULL;
	t->elf = NULL;
	t->fd = -1;
}

int target__file_offset(const struct target *t, uint64_t addr, uint64_t *offset)
{
	for (unsigned i = 0; i < t->nr_segs; i++) {
		const struct load_segment *s = &t->segs[i];
		if (!(s->flags & PF_X))
			continue;
		if (addr >= s->vaddr && addr - s->vaddr < s->filesz) {
			*offset = addr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* Bytes of [addr, addr+size) from one allocated PROGBITS section with these flags. */
static int section_bytes(const struct target *t, uint64_t addr, uint64_t size, uint64_t flags,
			 const uint8_t **bytes)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(t->elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & flags) != flags ||
		    sh.sh_type != SHT_PROGBITS)
			continue;
		if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
			continue;
		if (size > sh.sh_size - (addr - sh.sh_addr))
			return -ERANGE;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			return -ENOENT;
		*bytes = (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
		return 0;
	}
	return -ENOENT;
}

int target__code(const struct target *t, uint64_t addr, uint64_t size, const uint8_t **bytes)
{
	return section_bytes(t, addr, size, SHF_EXECINSTR | SHF_ALLOC, bytes);
}

int target__data(const struct target *t, uint64_t addr, uint64_t size, const uint8_t **bytes)
{
	return section_bytes(t, addr, size, SHF_ALLOC, bytes);
}

/* The value a relocation entry makes the loader write (x86-64 psABI types): false for
 * one it cannot know here (another object's symbol) or does not handle. */
static bool rela_value(Elf_Data *symd, const GElf_Rela *r, uint64_t *v)
{
	GElf_Sym sym;

	switch (GELF_R_TYPE(r->r_info)) {
	case R_X86_64_RELATIVE: *v = (uint64_t)r->r_addend; return true;
	case R_X86_64_64:
	case R_X86_64_GLOB_DAT:
	case R_X86_64_JUMP_SLOT:
		if (!symd || !gelf_getsym(symd, (int)GELF_R_SYM(r->r_info), &sym) ||
		    sym.st_shndx == SHN_UNDEF)
			return false;
		*v = sym.st_value +
		     (GELF_R_TYPE(r->r_info) == R_X86_64_64 ? (uint64_t)r->r_addend : 0);
		return true;
	default: return false;
	}
}

/* Every entry of every SHT_RELA section with a known value: cb(ctx, where, value). */
static int for_each_rela(struct target *t, int (*cb)(void *ctx, uint64_t at, uint64_t value),
			 void *ctx)
{
	Elf_Scn *scn = NULL;

	if (t->ehdr.e_machine != EM_X86_64)
		return 0;
	while ((scn = elf_nextscn(t->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d, *symd = NULL;
		Elf_Scn *symscn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		symscn = sh.sh_link ? elf_getscn(t->elf, sh.sh_link) : NULL;
		if (symscn)
			symd = elf_getdata(symscn, NULL);
		for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			uint64_t v;
			int e;

			if (!gelf_getrela(d, (int)i, &r))
				break;
			if (rela_value(symd, &r, &v) && (e = cb(ctx, r.r_offset, v)))
				return e;
		}
	}
	return 0;
}

static int remember_reloc(void *ctx, uint64_t at, uint64_t value)
{
	return u64_map__set(ctx, at, value) ? -ENOMEM : 0;
}

struct holding {
	const struct u64_map *values;
	int (*cb)(void *ctx, uint64_t at, uint64_t value);
	void *ctx;
	uint64_t relocs;
};

static int check_holding(void *ctx, uint64_t at, uint64_t value)
{
	struct holding *h = ctx;

	h->relocs++;
	return u64_map__get(h->values, value, NULL) ? h->cb(h->ctx, at, value) : 0;
}

int target__words_holding(struct target *t, const struct u64_map *values,
			  int (*cb)(void *ctx, uint64_t at, uint64_t value), void *ctx)
{
	struct holding h = {values, cb, ctx, 0};
	int e = for_each_rela(t, check_holding, &h);

	if (e || h.relocs)
		return e;
	/* no dynamic relocations (a static, non-PIE executable): the words are in the data */
	return target__data_words_holding(t, values, cb, ctx);
}

int target__data_words_holding(struct target *t, const struct u64_map *values,
			       int (*cb)(void *ctx, uint64_t at, uint64_t value), void *ctx)
{
	Elf_Scn *scn = NULL;
	int e;

	while ((scn = elf_nextscn(t->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || (sh.sh_flags & SHF_EXECINSTR))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size != sh.sh_size)
			continue;
		for (uint64_t o = (8 - (sh.sh_addr & 7)) & 7; o + 8 <= sh.sh_size; o += 8) {
			uint64_t w;

			memcpy(&w, (const uint8_t *)d->d_buf + o, 8);
			if (u64_map__get(values, w, NULL) && (e = cb(ctx, sh.sh_addr + o, w)))
				return e;
		}
	}
	return 0;
}

int target__pointer(struct target *t, uint64_t addr, uint64_t *value)
{
	const uint8_t *b;

	if (!t->relocs_read) {
		t->relocs = calloc(1, sizeof(*t->relocs));
		if (!t->relocs)
			return -ENOMEM;
		u64_map__init(t->relocs);
		t->relocs_read = true;
		if (for_each_rela(t, remember_reloc, t->relocs))
			return -ENOMEM;
	}
	if (t->relocs && u64_map__get(t->relocs, addr, value))
		return 0;
	if (target__data(t, addr, 8, &b))
		return -ENOENT;
	memcpy(value, b, 8);
	return 0;
}

void target__explain_missing_dwarf(const struct target *t, char *buf, size_t len)
{
	if (t->debuglink[0]) {
		char dir[PATH_MAX], cand[PATH_MAX + 300];
		snprintf(dir, sizeof(dir), "%s", t->search_path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		const char *fmts[] = {"%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s"};
		for (size_t i = 0; i < 3; i++) {
			snprintf(cand, sizeof(cand), fmts[i], dir, t->debuglink);
			if (access(cand, F_OK) == 0) {
				snprintf(
				    buf, len,
				    "its .gnu_debuglink names '%s' and %s exists, but it does not "
				    "match this binary (CRC or build-id differ): mismatched "
				    "debuginfo; rebuild or find the debug file of this exact build",
				    t->debuglink, cand);
				return;
			}
		}
		snprintf(buf, len,
			 "its .gnu_debuglink names '%s', which is not next to the binary, in "
			 ".debug/ or under /usr/lib/debug; install or copy the debug file there",
			 t->debuglink);
		return;
	}
	if (t->build_id[0]) {
		snprintf(buf, len,
			 "it has no .debug_info and no separate debuginfo was found for build-id "
			 "%s (looked in /usr/lib/debug/.build-id/); build with debug = true or "
			 "install the -dbgsym package",
			 t->build_id);
		return;
	}
	snprintf(buf, len,
		 "it has no .debug_info, no .gnu_debuglink and no build-id; build with debug = "
		 "true in the Cargo profile");
}
