// SPDX-License-Identifier: GPL-2.0
/*
 * The type tree of a future type or of an __awaitee (type_tree.h): what the future
 * trees are read from. Box and references are followed (what a future owns or
 * borrows), never raw pointers (a Vec's buffer, an Arc's inner value, a linked
 * list), which hold no future this one owns at a known place. Breadth first (the
 * shallow members first), bounded in depth and size; a type is never followed into
 * itself; std types that cannot lead to a future are not entered.
 */
#include "analyze/type_tree.h"

#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "analyze/crate.h"

#define TREE_MAX_CHILDREN 4096 /* members and variants read per type */

static const char dyn_future[] = "dyn core::future::future::Future";

struct builder {
	struct walk *w;
	struct type_node *nodes; /* TYPE_TREE_MAX_NODES of them */
	uint32_t nr;
	bool truncated;
};

/* A variant's condition, as the nodes under it carry it. */
struct variant_cond {
	bool cond, bad;
	uint8_t kind, size;
	uint64_t offset, lo, hi;
};

/* `dyn Future<Output = T>`, or with more bounds `(dyn Future<..> + Send)` */
static bool is_dyn_future(Dwarf_Die *t)
{
	const char *n = dwarf_diename(t);

	return dwarf_tag(t) == DW_TAG_structure_type && n &&
	       starts_with(n[0] == '(' ? n + 1 : n, dyn_future);
}

/*
 * Does a tree follow this pointer? Box and references: what a future owns or
 * borrows (Pin<Box<F>>, Pin<&mut F>, join!'s `&mut` to its futures). An unnamed
 * pointer only as a fat pointer's data half to a `dyn Future`. Raw pointers never.
 */
static bool follows(Dwarf_Die *ptr, Dwarf_Die *pointee)
{
	const char *n = dwarf_diename(ptr);

	if (n)
		return starts_with(n, "alloc::boxed::Box<") || n[0] == '&';
	return is_dyn_future(pointee);
}

/* Down to the struct or union a type is, through typedefs, qualifiers and the
 * pointers a tree follows (*derefs counts them). */
static bool resolve_type(Dwarf_Die *die, uint8_t *derefs)
{
	*derefs = 0;
	for (int i = 0; i < 16; i++) {
		Dwarf_Die next;

		switch (dwarf_tag(die)) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type: return !dwarf_hasattr(die, DW_AT_declaration);
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
			if (!die_type(die, &next))
				return false;
			*die = next;
			break;
		case DW_TAG_pointer_type:
		case DW_TAG_reference_type:
		case DW_TAG_rvalue_reference_type:
			if (!die_type(die, &next) || !follows(die, &next))
				return false;
			(*derefs)++;
			*die = next;
			break;
		default: return false;
		}
	}
	return false;
}

static bool is_std(const char *path)
{
	char crate[128];

	rust_path__crate(path, crate, sizeof(crate));
	return crate__classify(crate) == CRATE_STD;
}

/*
 * A type that cannot lead to a future of this one: std's types that are not generic
 * (they hold only std's own types; std's only futures are generic), and those that
 * keep what they hold behind raw pointers, which a tree never follows. Skipping them
 * saves the bounds for what matters.
 */
static bool dead_end(const char *path)
{
	static const char *const raw_holders[] = {
	    "core::marker::PhantomData<", "core::ptr::non_null::NonNull<",
	    "core::ptr::unique::Unique<", "alloc::sync::Arc<",
	    "alloc::sync::Weak<",	  "alloc::rc::Rc<",
	    "alloc::rc::Weak<",		  "alloc::vec::Vec<",
	    "alloc::raw_vec::RawVec<",	  "alloc::collections::vec_deque::VecDeque<",
	};

	if (!path || path[0] == '(' || !is_std(path)) /* a tuple: of whatever it holds */
		return false;
	if (!strchr(path, '<'))
		return true;
	for (size_t i = 0; i < sizeof(raw_holders) / sizeof(raw_holders[0]); i++)
		if (starts_with(path, raw_holders[i]))
			return true;
	return false;
}

/* Has the struct any member, or a variant part? (an anonymous one without is a leaf
 * that leads nowhere: a unit variant) */
static bool has_members(Dwarf_Die *st)
{
	Dwarf_Die c;

	if (dwarf_child(st, &c) != 0)
		return false;
	for (int n = 0; n < TREE_MAX_CHILDREN; n++) {
		if (dwarf_tag(&c) == DW_TAG_member || dwarf_tag(&c) == DW_TAG_variant_part)
			return true;
		if (dwarf_siblingof(&c, &c) != 0)
			break;
	}
	return false;
}

static bool in_chain(const struct builder *b, int32_t i, uint64_t die)
{
	for (int d = 0; i >= 0 && d <= TYPE_TREE_MAX_DEPTH + 1; d++, i = b->nodes[i].parent)
		if (b->nodes[i].die == die)
			return true;
	return false;
}

static const char *intern(struct walk *w, const char *s)
{
	return strpool__intern(&w->m->strings, s ? s : "?");
}

/* The member `name` of struct st: its offset. */
static bool member_at(Dwarf_Die *st, const char *name, uint64_t *off)
{
	Dwarf_Die c;

	if (dwarf_child(st, &c) != 0)
		return false;
	for (int n = 0; n < TREE_MAX_CHILDREN; n++) {
		const char *cn = dwarf_diename(&c);

		if (dwarf_tag(&c) == DW_TAG_member && cn && strcmp(cn, name) == 0)
			return member_offset(&c, off);
		if (dwarf_siblingof(&c, &c) != 0)
			break;
	}
	return false;
}

/* A member of node `parent`'s type st: its type becomes a node, if a tree goes there. */
static int add_member(struct builder *b, int32_t parent, Dwarf_Die *st, Dwarf_Die *member,
		      const struct variant_cond *vc)
{
	struct walk *w = b->w;
	Dwarf_Die t;
	uint64_t at = 0;
	uint8_t derefs;

	member_offset(member, &at); /* a union's members have no location: at 0 */
	if (!die_type(member, &t) || !resolve_type(&t, &derefs))
		return 0;
	uint64_t die = dwarf_dieoffset(&t);
	if (in_chain(b, parent, die))
		return 0; /* a type inside itself: only through a pointer, never followed twice */
	if (b->nr == TYPE_TREE_MAX_NODES) {
		b->truncated = b->nodes[parent].cut = true;
		return 0;
	}
	const char *name = dwarf_diename(&t), *path = walk__type_path(w, die);
	if (dead_end(path) || (!path && !is_dyn_future(&t) && !has_members(&t)))
		return 0;
	struct type_node *n = &b->nodes[b->nr];

	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->depth = (uint8_t)(b->nodes[parent].depth + 1);
	n->derefs = derefs;
	n->die = die;
	n->offset = at;
	n->member = intern(w, dwarf_diename(member));
	n->path = path ? strpool__intern(&w->m->strings, path) : NULL;
	if (!n->member || (path && !n->path))
		return -ENOMEM;
	n->is_env =
	    name && name[0] == '{' && future_kind__from_name(name, NULL) != FUTURE_HANDWRITTEN;
	n->is_dyn = is_dyn_future(&t);
	/* the fat pointer this data half is in: its vtable half */
	if (n->is_dyn && (derefs != 1 || !member_at(st, "vtable", &n->vtable)))
		n->vtable_bad = true;
	if (vc) {
		n->cond = vc->cond;
		n->cond_bad = vc->bad;
		n->cond_kind = vc->kind;
		n->cond_size = vc->size;
		n->cond_offset = vc->offset;
		n->cond_lo = vc->lo;
		n->cond_hi = vc->hi;
	}
	b->nr++;
	return 0;
}

/* The discriminant of a variant part: its offset and size. */
static bool part_discr(Dwarf_Die *part, uint64_t *offset, uint32_t *size)
{
	Dwarf_Attribute a;
	Dwarf_Die discr, t;

	if (!dwarf_formref_die(dwarf_attr(part, DW_AT_discr, &a), &discr) ||
	    !member_offset(&discr, offset) || !die_type(&discr, &t))
		return false;
	*size = (uint32_t)die_bytesize(&t);
	return true;
}

/*
 * The variants of an enum's variant part. A variant with a DW_AT_discr_value is live
 * when the discriminant holds it; one without (the untagged variant of a niche
 * enum) when it holds none of the others' values, written as the range they span
 * when it has no hole. What cannot be written marks the nodes below as cond_bad.
 */
static int add_variants(struct builder *b, int32_t parent, Dwarf_Die *st, Dwarf_Die *part)
{
	struct variant_cond base = {0};
	uint64_t lo = UINT64_MAX, hi = 0, count = 0;
	uint32_t size = 0;
	bool have = part_discr(part, &base.offset, &size), odd = false;
	Dwarf_Die v, m;
	int err = 0;

	base.size = (uint8_t)size;
	uint64_t mask = size >= 8 ? UINT64_MAX : (1ull << (8 * size)) - 1;
	bool size_ok = size == 1 || size == 2 || size == 4 || size == 8;

	if (dwarf_child(part, &v) != 0)
		return 0;
	for (int n = 0; n < TREE_MAX_CHILDREN; n++) { /* the values the variants hold */
		Dwarf_Word val;

		if (dwarf_tag(&v) == DW_TAG_variant) {
			if (dwarf_hasattr(&v, DW_AT_discr_list))
				odd = true;
			else if (die_discr_value(&v, &val)) {
				lo = val < lo ? val : lo;
				hi = val > hi ? val : hi;
				count++;
			} else if (dwarf_hasattr(&v, DW_AT_discr_value)) {
				odd = true; /* a value over 64 bits */
			}
		}
		if (dwarf_siblingof(&v, &v) != 0)
			break;
	}
	dwarf_child(part, &v);
	for (int n = 0; n < TREE_MAX_CHILDREN && !err; n++) {
		struct variant_cond c = base;
		Dwarf_Word val;

		if (dwarf_tag(&v) == DW_TAG_variant) {
			if (die_discr_value(&v, &val)) {
				c.cond = true;
				c.kind = TREE_COND_IN;
				c.lo = c.hi = val;
				c.bad = !have || !size_ok || val > mask || odd;
			} else if (count) { /* the untagged variant */
				c.cond = true;
				c.kind = TREE_COND_NOT_IN;
				c.lo = lo;
				c.hi = hi;
				c.bad =
				    !have || !size_ok || hi > mask || odd || hi - lo + 1 != count;
			} else {
				c.bad = odd; /* the only variant: always live */
			}
			if (dwarf_child(&v, &m) == 0)
				for (int k = 0; k < TREE_MAX_CHILDREN && !err; k++) {
					if (dwarf_tag(&m) == DW_TAG_member)
						err = add_member(b, parent, st, &m, &c);
					if (dwarf_siblingof(&m, &m) != 0)
						break;
				}
		}
		if (dwarf_siblingof(&v, &v) != 0)
			break;
	}
	return err;
}

/* The members of node i's type, and those of its enum variants. */
static int expand(struct builder *b, int32_t i)
{
	Dwarf_Die st, c;
	int err = 0;

	if (!b->nodes[i].die || !dwarf_offdie(b->w->dw, b->nodes[i].die, &st) ||
	    dwarf_child(&st, &c) != 0)
		return 0;
	for (int n = 0; n < TREE_MAX_CHILDREN && !err; n++) {
		if (dwarf_tag(&c) == DW_TAG_member)
			err = add_member(b, i, &st, &c, NULL);
		else if (dwarf_tag(&c) == DW_TAG_variant_part)
			err = add_variants(b, i, &st, &c);
		if (dwarf_siblingof(&c, &c) != 0)
			break;
	}
	return err;
}

bool type_tree__std_wrapper(const char *path)
{
	return path && strchr(path, '<') && is_std(path);
}

/* Is node i where its branch of the tree ends? A compiler future, a dyn Future, a
 * known future (but a std wrapper: Pin<Box<F>> is looked through), the depth bound. */
static bool ends_here(struct builder *b, int32_t i)
{
	struct type_node *n = &b->nodes[i];
	Dwarf_Die st, c;

	if (n->is_env || n->is_dyn)
		return true;
	if (n->path && u64_map__get(&b->w->future_by_path, (uintptr_t)n->path, NULL) &&
	    !type_tree__std_wrapper(n->path))
		return true;
	if (n->depth >= TYPE_TREE_MAX_DEPTH) {
		if (dwarf_offdie(b->w->dw, n->die, &st) && dwarf_child(&st, &c) == 0)
			b->truncated = n->cut = true;
		return true;
	}
	return false;
}

static int build(struct builder *b, Dwarf_Die *type, bool self, const char *root_member)
{
	Dwarf_Die t = *type;
	uint8_t derefs;
	int err = 0;

	b->nr = 0;
	b->truncated = false;
	if (!resolve_type(&t, &derefs))
		return 0;
	memset(&b->nodes[0], 0, sizeof(b->nodes[0]));
	b->nodes[0].parent = -1;
	b->nodes[0].member = intern(b->w, root_member);
	if (!b->nodes[0].member)
		return -ENOMEM;
	b->nr = 1;
	if (self && derefs) { /* node 0 stands for the pointer; the pointee is a member */
		b->nodes[1] = b->nodes[0];
		b->nodes[1].parent = 0;
		b->nodes[1].depth = 1;
		b->nodes[1].member = intern(b->w, "*");
		b->nr = 2;
	}
	struct type_node *n = &b->nodes[b->nr - 1];
	const char *path = walk__type_path(b->w, dwarf_dieoffset(&t)), *name = dwarf_diename(&t);
	n->die = dwarf_dieoffset(&t);
	n->derefs = derefs;
	n->path = path ? strpool__intern(&b->w->m->strings, path) : NULL;
	if (!n->member || (path && !n->path))
		return -ENOMEM;
	n->is_env =
	    name && name[0] == '{' && future_kind__from_name(name, NULL) != FUTURE_HANDWRITTEN;
	n->is_dyn = is_dyn_future(&t);
	n->vtable_bad = n->is_dyn; /* a bare dyn awaitee: no fat pointer around it */
	for (uint32_t i = 0; i < b->nr && !err; i++)
		if ((self && i == 0) || !ends_here(b, (int32_t)i))
			err = expand(b, (int32_t)i);
	return err;
}

int type_tree__build(struct walk *w, Dwarf_Die *type, bool self, const char *root_member,
		     struct type_node *nodes, uint32_t *nr, bool *truncated)
{
	struct builder b = {.w = w, .nodes = nodes};
	int err = build(&b, type, self, root_member);

	*nr = b.nr;
	*truncated = b.truncated;
	return err;
}

bool type_tree__discr(Dwarf_Die *type, uint64_t *offset, uint32_t *size)
{
	Dwarf_Die c;

	if (dwarf_child(type, &c) != 0)
		return false;
	for (int n = 0; n < TREE_MAX_CHILDREN; n++) {
		if (dwarf_tag(&c) == DW_TAG_variant_part)
			return part_discr(&c, offset, size);
		if (dwarf_siblingof(&c, &c) != 0)
			break;
	}
	return false;
}
