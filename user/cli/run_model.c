// SPDX-License-Identifier: GPL-2.0
/* Who owns a run's analysis (run_model.h). */
#include "cli/run_model.h"

void run_model__borrow(struct model *m, struct run_model *own, const struct model *shared)
{
	*m = *shared;
	*own = (struct run_model){.borrowed = true};
}

bool run_model__give(struct model *m, struct run_model *own, struct model *out)
{
	if (!own->loaded || !own->ok)
		return false;
	*out = *m;
	*own = (struct run_model){.borrowed = true};
	return true;
}

void run_model__free(struct model *m, struct run_model *own)
{
	if (own->loaded)
		model__free(m);
	own->loaded = own->ok = false;
}
