/* The tool registry: names, declared parameters, limits, sealing, argument checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PARAM_NAME_MAX 128
#define PARAMS_MAX 256
#define DESCRIPTION_MAX 65536

static const char *const type_names[] = {
	[MAFH_JSON_ANY] = "any",
	[MAFH_JSON_STRING] = "string",
	[MAFH_JSON_NUMBER] = "number",
	[MAFH_JSON_INTEGER] = "integer",
	[MAFH_JSON_BOOLEAN] = "boolean",
	[MAFH_JSON_OBJECT] = "object",
	[MAFH_JSON_ARRAY] = "array",
	[MAFH_JSON_NULL] = "null",
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

const char *mafh_json_type_name(enum mafh_json_type type)
{
	return (unsigned)type < NTYPES ? type_names[type] : "unknown";
}

int mafh_json_type_from_name(const char *name, enum mafh_json_type *out)
{
	size_t i;

	for (i = 0; name && i < NTYPES; i++) {
		if (strcmp(name, type_names[i]) == 0) {
			*out = (enum mafh_json_type)i;
			return 0;
		}
	}
	return MAFH_EINVAL;
}

void mafh_limits_init(struct mafh_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->size = sizeof(*lim);
	lim->max_calls = MAFP_DEFAULT_MAX_CALLS;
	lim->max_response_bytes = MAFP_DEFAULT_RESPONSE_MAX;
	lim->max_total_response_bytes = 64u << 20;
	lim->max_request_bytes = 1u << 20;
	lim->max_output_bytes = 1u << 20;
}

int mafh_registry_new(struct mafh_registry **out)
{
	struct mafh_registry *reg = calloc(1, sizeof(*reg));

	*out = NULL;
	if (!reg)
		return MAFH_ENOMEM;
	mafh_limits_init(&reg->limits);
	*out = reg;
	return 0;
}

static void tool_clear(struct mafh__tool *t)
{
	size_t i;

	for (i = 0; i < t->n_params; i++)
		free((char *)t->params[i].name);
	free(t->params);
	free(t->name);
	free(t->description);
	memset(t, 0, sizeof(*t));
}

void mafh_registry_free(struct mafh_registry *reg)
{
	size_t i;

	if (!reg)
		return;
	for (i = 0; i < reg->n_tools; i++)
		tool_clear(&reg->tools[i]);
	free(reg->tools);
	free(reg);
}

const struct mafh__tool *mafh__registry_find(const struct mafh_registry *reg, const char *name)
{
	size_t i;

	for (i = 0; i < reg->n_tools; i++)
		if (strcmp(reg->tools[i].name, name) == 0)
			return &reg->tools[i];
	return NULL;
}

static int param_name_valid(const char *name)
{
	size_t n = name ? strnlen(name, PARAM_NAME_MAX + 1) : 0;

	return n >= 1 && n <= PARAM_NAME_MAX;
}

int mafh_registry_add(struct mafh_registry *reg, const struct mafh_tool *tool,
		      struct mafh_error *err)
{
	struct mafh_tool t;
	struct mafh__tool nt;
	size_t i, j;

	if (!reg || !tool || tool->size < offsetof(struct mafh_tool, ud))
		return mafh__error_set(err, MAFH_EINVAL, "the tool or its size field is not set");
	mafh__copy_versioned(&t, sizeof(t), tool, tool->size);
	if (reg->sealed)
		return mafh__error_set(err, MAFH_EPERM,
				       "the registry is sealed: a run has read it, so tool '%.128s' "
				       "cannot be registered any more", t.name ? t.name : "");
	if (reg->pass_through)
		return mafh__error_set(err, MAFH_EINVAL, "the registry is a pass-through: every "
				       "request goes to its one callback, so tool '%.128s' cannot be "
				       "registered", t.name ? t.name : "");
	if (!t.name || !mafp_tool_name_valid(t.name))
		return mafh__error_set(err, MAFH_EINVAL,
				       "a tool name must be 1 to %d printable ASCII characters "
				       "other than space, '/', '\\' and '\"'", MAFP_TOOL_NAME_MAX);
	if (mafh__registry_find(reg, t.name))
		return mafh__error_set(err, MAFH_EEXIST, "the tool '%s' is already registered",
				       t.name);
	if (t.description && strnlen(t.description, DESCRIPTION_MAX + 1) > DESCRIPTION_MAX)
		return mafh__error_set(err, MAFH_EINVAL, "the description of '%s' is longer "
				       "than %d bytes", t.name, DESCRIPTION_MAX);
	if (t.n_params > PARAMS_MAX || (t.n_params && !t.params))
		return mafh__error_set(err, MAFH_EINVAL, "the tool '%s' declares more than %d "
				       "parameters or none where some were counted", t.name,
				       PARAMS_MAX);
	for (i = 0; i < t.n_params; i++) {
		if (!param_name_valid(t.params[i].name))
			return mafh__error_set(err, MAFH_EINVAL, "parameter %zu of '%s' has no "
					       "name of 1 to %d bytes", i + 1, t.name,
					       PARAM_NAME_MAX);
		if ((unsigned)t.params[i].type >= NTYPES)
			return mafh__error_set(err, MAFH_EINVAL, "parameter '%s' of '%s' has an "
					       "unknown JSON type", t.params[i].name, t.name);
		for (j = 0; j < i; j++)
			if (strcmp(t.params[i].name, t.params[j].name) == 0)
				return mafh__error_set(err, MAFH_EINVAL, "parameter '%s' of '%s' "
						       "is declared twice", t.params[i].name,
						       t.name);
	}

	memset(&nt, 0, sizeof(nt));
	nt.fn = t.fn;
	nt.ud = t.ud;
	nt.name = strdup(t.name);
	nt.description = strdup(t.description ? t.description : "");
	nt.params = calloc(t.n_params ? t.n_params : 1, sizeof(*nt.params));
	if (!nt.name || !nt.description || !nt.params)
		goto nomem;
	for (i = 0; i < t.n_params; i++) {
		nt.params[i] = t.params[i];
		nt.params[i].required = !!t.params[i].required;
		nt.params[i].name = strdup(t.params[i].name);
		if (!nt.params[i].name)
			goto nomem;
		nt.n_params = i + 1;
	}
	if (reg->n_tools == reg->cap_tools) {
		size_t nc = reg->cap_tools ? reg->cap_tools * 2 : 8;
		struct mafh__tool *nts = realloc(reg->tools, nc * sizeof(*nts));

		if (!nts)
			goto nomem;
		reg->tools = nts;
		reg->cap_tools = nc;
	}
	reg->tools[reg->n_tools++] = nt;
	return 0;
nomem:
	tool_clear(&nt);
	return mafh__error_set(err, MAFH_ENOMEM, "out of memory");
}

int mafh_registry_set_pass_through(struct mafh_registry *reg, mafh_tool_fn fn, void *ud,
				   struct mafh_error *err)
{
	if (!reg)
		return mafh__error_set(err, MAFH_EINVAL, "no registry");
	if (reg->sealed)
		return mafh__error_set(err, MAFH_EPERM, "the registry is sealed: a run has read it");
	if (reg->n_tools)
		return mafh__error_set(err, MAFH_EINVAL, "the registry holds tools: a pass-through "
				       "registry serves every request through its one callback");
	reg->pass_through = 1;
	reg->pt_fn = fn;
	reg->pt_ud = ud;
	return 0;
}

int mafh_registry_set_limits(struct mafh_registry *reg, const struct mafh_limits *lim,
			     struct mafh_error *err)
{
	struct mafh_limits l;

	if (!reg || !lim || lim->size < sizeof(size_t) + sizeof(int64_t))
		return mafh__error_set(err, MAFH_EINVAL, "the limits or their size field is "
				       "not set");
	if (reg->sealed)
		return mafh__error_set(err, MAFH_EPERM, "the registry is sealed: a run has read "
				       "it, so its limits cannot change any more");
	/* Fields an older caller did not know keep their current values. */
	l = reg->limits;
	memcpy(&l, lim, lim->size < sizeof(l) ? lim->size : sizeof(l));
	l.size = sizeof(l);
	if (l.max_calls < 0 || l.max_calls > MAFP_CALL_ID_MAX)
		return mafh__error_set(err, MAFH_EINVAL, "max_calls must be within 0..%d",
				       MAFP_CALL_ID_MAX);
	if (!l.max_response_bytes || !l.max_total_response_bytes || !l.max_request_bytes ||
	    !l.max_output_bytes)
		return mafh__error_set(err, MAFH_EINVAL, "every byte cap must be at least 1");
	/* A cap must also fit in memory on this machine (size_t). */
	if (l.max_response_bytes > SIZE_MAX / 2 || l.max_request_bytes > SIZE_MAX / 2 ||
	    l.max_output_bytes > SIZE_MAX / 2)
		return mafh__error_set(err, MAFH_EINVAL, "a byte cap is too large");
	reg->limits = l;
	return 0;
}

void mafh_registry_get_limits(const struct mafh_registry *reg, struct mafh_limits *lim)
{
	size_t n = lim->size && lim->size < sizeof(reg->limits) ? lim->size
								: sizeof(reg->limits);

	memcpy(lim, &reg->limits, n);
	lim->size = n;
}

void mafh_registry_seal(struct mafh_registry *reg)
{
	reg->sealed = 1;
}

int mafh_registry_sealed(const struct mafh_registry *reg)
{
	return reg->sealed;
}

size_t mafh_registry_count(const struct mafh_registry *reg)
{
	return reg->n_tools;
}

const char *mafh_registry_tool_name(const struct mafh_registry *reg, size_t i)
{
	return i < reg->n_tools ? reg->tools[i].name : NULL;
}

const char *mafh_registry_tool_description(const struct mafh_registry *reg, size_t i)
{
	return i < reg->n_tools ? reg->tools[i].description : NULL;
}

uint64_t mafh_registry_transfer_bytes(const struct mafh_registry *reg)
{
	uint64_t calls = (uint64_t)reg->limits.max_calls;
	uint64_t per = reg->limits.max_response_bytes, out = reg->limits.max_output_bytes;
	uint64_t total;

	if (per && calls > UINT64_MAX / per)
		return UINT64_MAX;
	total = calls * per;
	if (total > UINT64_MAX - out)
		return UINT64_MAX;
	return total + out;
}

static int type_matches(const cJSON *v, enum mafh_json_type type)
{
	switch (type) {
	case MAFH_JSON_ANY:
		return 1;
	case MAFH_JSON_STRING:
		return cJSON_IsString(v);
	case MAFH_JSON_NUMBER:
		return cJSON_IsNumber(v);
	case MAFH_JSON_INTEGER:
		/* JSON has one number type: an integer is a number with no fractional part
		 * that a double holds exactly. */
		return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
		       v->valuedouble == floor(v->valuedouble) &&
		       fabs(v->valuedouble) <= 9007199254740992.0;
	case MAFH_JSON_BOOLEAN:
		return cJSON_IsBool(v);
	case MAFH_JSON_OBJECT:
		return cJSON_IsObject(v);
	case MAFH_JSON_ARRAY:
		return cJSON_IsArray(v);
	case MAFH_JSON_NULL:
		return cJSON_IsNull(v);
	}
	return 0;
}

/* Sentences here go back to the program as refusals: they name the tool and parameter, and
 * quote nothing else the guest wrote beyond a short, printable-checked key. */
int mafh__registry_check_tree(const struct mafh_registry *reg, const char *name,
			      const cJSON *args, struct mafh_error *err)
{
	const struct mafh__tool *t = mafh__registry_find(reg, name);
	const cJSON *a;
	size_t i;

	if (!t)
		return mafh__error_set(err, MAFH_ENOENT, "there is no host tool named '%.128s'",
				       name);
	if (!cJSON_IsObject(args))
		return mafh__error_set(err, MAFH_EINVAL, "the arguments of '%s' are not a JSON "
				       "object", t->name);
	for (i = 0; i < t->n_params; i++) {
		const struct mafh_param *p = &t->params[i];

		a = cJSON_GetObjectItemCaseSensitive(args, p->name);
		if (!a) {
			if (p->required)
				return mafh__error_set(err, MAFH_EINVAL, "the tool '%s' needs the "
						       "argument '%s'", t->name, p->name);
			continue;
		}
		if (!type_matches(a, p->type))
			return mafh__error_set(err, MAFH_EINVAL, "the argument '%s' of '%s' must "
					       "be of JSON type %s", p->name, t->name,
					       mafh_json_type_name(p->type));
	}
	/* A declared parameter list is closed, like a Python signature: an unknown keyword is
	 * refused rather than silently dropped. A tool declaring none takes any object. */
	if (t->n_params == 0)
		return 0;
	cJSON_ArrayForEach(a, args) {
		int known = 0;

		for (i = 0; i < t->n_params && !known; i++)
			known = a->string && strcmp(a->string, t->params[i].name) == 0;
		if (!known) {
			char key[64];
			size_t k;

			snprintf(key, sizeof(key), "%s", a->string ? a->string : "");
			for (k = 0; key[k]; k++)
				if ((unsigned char)key[k] < 0x20 || (unsigned char)key[k] >= 0x7f)
					key[k] = '?';
			return mafh__error_set(err, MAFH_EINVAL, "the tool '%s' has no parameter "
					       "'%s'", t->name, key);
		}
	}
	return 0;
}

int mafh_registry_check_args(const struct mafh_registry *reg, const char *name,
			     const char *args_json, size_t len, struct mafh_error *err)
{
	cJSON *args;
	int rc;

	if (!reg || !name || (!args_json && len))
		return mafh__error_set(err, MAFH_EINVAL, "checking arguments needs a registry, a "
				       "tool name and the arguments' text");
	if (!mafh__registry_find(reg, name))
		return mafh__error_set(err, MAFH_ENOENT, "there is no host tool named '%.128s'",
				       name);
	args = mafp_json_parse(args_json ? args_json : "", len, len);
	if (!args)
		return mafh__error_set(err, MAFH_EINVAL, "the arguments of '%s' are not one JSON "
				       "value", name);
	rc = mafh__registry_check_tree(reg, name, args, err);
	cJSON_Delete(args);
	return rc;
}
