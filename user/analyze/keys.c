// SPDX-License-Identifier: GPL-2.0
/*
 * The way from a value to a key through its DWARF type (keys.h). Written here, not
 * taken from a library: it is a walk of libdw's DIEs for members and pointers, which
 * no library offers as such.
 */
#include "analyze/keys.h"

#include <dwarf.h>
#include <string.h>

#define FIND_DEPTH 8

bool keys__ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The last path segment of a pattern ("Semaphore" of "...::batch_semaphore::Semaphore",
 * "Mutex<" of "async_lock::mutex::Mutex<"): what the type's own DW_AT_name starts with. */
static const char *last_segment(const char *pattern)
{
	const char *last = pattern;

	for (const char *p = pattern; *p && *p != '<'; p++)
		if (p[0] == ':' && p[1] == ':')
			last = p + 2;
	return last;
}

bool keys__match(struct walk *w, Dwarf_Die *type, const struct key_kind *k)
{
	const char *pattern = k->exact	  ? k->exact
			      : k->prefix ? k->prefix
					  : k->suffix,
		   *name = dwarf_diename(type), *seg, *path;

	/* the type's own name first: a full path is a walk of a unit's namespaces, and
	 * most types looked at are not the key */
	if (!pattern || !name)
		return false;
	seg = last_segment(pattern);
	if (strncmp(name, seg, strlen(seg)) != 0 || (k->exact && strcmp(name, seg) != 0))
		return false;
	path = walk__type_path(w, dwarf_dieoffset(type));

	if (!path)
		return false;
	if (k->exact)
		return !strcmp(path, k->exact);
	if (k->prefix)
		return starts_with(path, k->prefix);
	return k->suffix && keys__ends_with(path, k->suffix);
}

bool keys__member(Dwarf_Die *st, const char *name, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return false;
	do {
		const char *n = dwarf_diename(&m);

		if (dwarf_tag(&m) == DW_TAG_member && n && !strcmp(n, name) &&
		    member_offset(&m, off) && (!type || die_type(&m, type)))
			return true;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

bool keys__env_member(Dwarf_Die *env, const char *name, uint64_t *off, Dwarf_Die *type)
{
	Dwarf_Die part, var, m, st;

	if (dwarf_child(env, &part) != 0)
		return false;
	do {
		if (dwarf_tag(&part) != DW_TAG_variant_part || dwarf_child(&part, &var) != 0)
			continue;
		do {
			uint64_t at, in;

			if (dwarf_tag(&var) != DW_TAG_variant || dwarf_child(&var, &m) != 0)
				continue;
			do {
				const char *n;

				/* the variant's member is named by its discriminant; its
				 * type by the state ("Suspend0") */
				if (dwarf_tag(&m) == DW_TAG_member && member_offset(&m, &at) &&
				    die_type(&m, &st) && (n = dwarf_diename(&st)) &&
				    starts_with(n, "Suspend") &&
				    keys__member(&st, name, &in, type)) {
					*off = at + in;
					return true;
				}
			} while (dwarf_siblingof(&m, &m) == 0);
		} while (dwarf_siblingof(&var, &var) == 0);
	} while (dwarf_siblingof(&part, &part) == 0);
	return false;
}

static bool find(struct walk *w, Dwarf_Die *t, int depth, const struct key_kind *k,
		 struct key_path *p);

/* One member (at off, of type mt) of struct holder (NULL: the start). */
static bool member(struct walk *w, uint64_t off, Dwarf_Die *mt, int depth, Dwarf_Die *holder,
		   const struct key_kind *k, struct key_path *p)
{
	Dwarf_Die pointee, last = p->pointee;
	bool had_last = p->has_pointee;
	uint8_t n = p->nr_steps;

	if (n >= GUARD_STEPS || ++p->visits > KEYS_BUDGET)
		return false;
	if (dwarf_tag(mt) == DW_TAG_pointer_type) {
		if (!die_type(mt, &pointee))
			return false;
		p->steps[n] = (struct await_step){off, true};
		p->nr_steps = n + 1;
		p->pointee = pointee;
		p->has_pointee = true;
		if (keys__match(w, &pointee, k)) {
			/* a pointer to the key itself: tokio's semaphore has no lock to name */
			p->name = k->named_by_holder
				      ? NULL
				      : walk__type_path(w, dwarf_dieoffset(&pointee));
			p->back = 0;
			p->key = pointee;
			return true;
		}
		if (dwarf_tag(&pointee) == DW_TAG_structure_type &&
		    find(w, &pointee, depth + 1, k, p))
			return true;
	} else if (dwarf_tag(mt) == DW_TAG_structure_type) {
		p->steps[n] = (struct await_step){off, false};
		p->nr_steps = n + 1;
		if (keys__match(w, mt, k)) {
			bool by_holder = k->named_by_holder && holder;

			p->name = walk__type_path(w, dwarf_dieoffset(by_holder ? holder : mt));
			p->back = by_holder ? off : 0;
			p->key = *mt;
			p->by_holder = by_holder;
			if (by_holder)
				p->holder = *holder;
			return true;
		}
		if (find(w, mt, depth + 1, k, p))
			return true;
	}
	p->nr_steps = n;
	p->pointee = last; /* (a pointer of a way that failed) */
	p->has_pointee = had_last;
	return false;
}

/* The members of a variant part's variants, as members of the enum t. */
static bool variants(struct walk *w, Dwarf_Die *part, int depth, Dwarf_Die *t,
		     const struct key_kind *k, struct key_path *p)
{
	Dwarf_Die var, m, mt;

	if (dwarf_child(part, &var) != 0)
		return false;
	do {
		uint64_t off;

		if (dwarf_tag(&var) != DW_TAG_variant || dwarf_child(&var, &m) != 0)
			continue;
		do {
			if (dwarf_tag(&m) == DW_TAG_member && member_offset(&m, &off) &&
			    die_type(&m, &mt) && member(w, off, &mt, depth, t, k, p))
				return true;
		} while (dwarf_siblingof(&m, &m) == 0);
	} while (dwarf_siblingof(&var, &var) == 0);
	return false;
}

/*
 * Depth first through the members of t in declaration order (a guard's lock comes
 * before its data), bounded: a key is a few members and an Arc away.
 */
static bool find(struct walk *w, Dwarf_Die *t, int depth, const struct key_kind *k,
		 struct key_path *p)
{
	Dwarf_Die m, mt;

	if (depth > FIND_DEPTH || dwarf_child(t, &m) != 0)
		return false;
	do {
		uint64_t off;

		if (dwarf_tag(&m) == DW_TAG_member && member_offset(&m, &off) &&
		    die_type(&m, &mt) && member(w, off, &mt, depth, t, k, p))
			return true;
		/* an enum's variants (`Option<Task>`'s Some): each variant's member is at
		 * its offset in the enum; a pointer on the way that reads null (None's
		 * niche) ends the way at run time */
		if (dwarf_tag(&m) == DW_TAG_variant_part && variants(w, &m, depth, t, k, p))
			return true;
	} while (dwarf_siblingof(&m, &m) == 0);
	return false;
}

/* Steps as few as they can be: offsets summed up to each deref, one last move. */
static bool compact(struct key_path *p)
{
	uint64_t pending = 0;
	uint8_t n = 0;

	for (uint8_t i = 0; i < p->nr_steps; i++) {
		pending += p->steps[i].offset;
		if (p->steps[i].deref) {
			p->steps[n++] = (struct await_step){pending, true};
			pending = 0;
		}
	}
	if (pending || !n)
		p->steps[n++] = (struct await_step){pending, false};
	p->nr_steps = n;
	return true;
}

bool keys__find(struct walk *w, Dwarf_Die *t, const struct key_kind *k, struct key_path *p)
{
	p->nr_steps = 0;
	p->visits = 0;
	p->has_pointee = false;
	return find(w, t, 0, k, p) && compact(p);
}

bool keys__from_member(struct walk *w, uint64_t off, Dwarf_Die *mtype, const struct key_kind *k,
		       struct key_path *p)
{
	p->nr_steps = 0;
	p->visits = 0;
	p->has_pointee = false;
	return member(w, off, mtype, 0, NULL, k, p) && compact(p);
}
