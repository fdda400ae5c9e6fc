// SPDX-License-Identifier: GPL-2.0
/* text_table: texts copied once under their id, found again, the first one kept. */
#include "testlib.h"
#include "lib/text_table.h"

int main(void)
{
	struct text_table t;
	char buf[32];
	const char *a;

	text_table__init(&t);
	CHECK(text_table__get(&t, 7) == NULL);
	snprintf(buf, sizeof(buf), "root → leaf");
	a = text_table__add(&t, 7, buf);
	CHECK(a && a != buf && !strcmp(a, "root → leaf"));
	buf[0] = 'X'; /* a copy: the caller's buffer may change */
	CHECK(!strcmp(text_table__get(&t, 7), "root → leaf"));
	CHECK(text_table__add(&t, 7, "other") == a); /* the first text stays */
	for (uint64_t id = 100; id < 200; id++) {    /* growth keeps every text */
		snprintf(buf, sizeof(buf), "t%" PRIu64, id);
		CHECK(text_table__add(&t, id, buf) != NULL);
	}
	for (uint64_t id = 100; id < 200; id++) {
		snprintf(buf, sizeof(buf), "t%" PRIu64, id);
		CHECK(!strcmp(text_table__get(&t, id), buf));
	}
	CHECK(text_table__get(&t, 7) == a);
	text_table__free(&t);
	text_table__free(&t); /* freeing twice is harmless: the table is zeroed */
	TEST_MAIN_END();
}
