/* test_gguf_write.c: the GGUF writer, read back by the GGUF reader: every
 * value type, the layout llama.cpp writes, key replacement, and failures
 * that must leave nothing at the destination. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/model/gguf.h"
#include "engine/model/gguf_write.h"
#include "engine/model/wtype.h"

#define FIX "tests/fixtures/gguf/"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/gguf_write.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

/* Removes the directory, which must hold only `keep` (or nothing). */
static void remove_dir(const char *keep)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    char stray[256] = "";
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!keep || strcmp(e->d_name, keep) != 0)
            snprintf(stray, sizeof stray, "%s", e->d_name);
        char p[320];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
    cr_assert_eq(stray[0], '\0', "left behind: %s", stray);
}

TestSuite(gguf_write, .init = make_dir);

static const char *path_in(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static gguf_writer *new_writer(const char *path)
{
    char err[256];
    gguf_writer *w;
    cr_assert_eq(gguf_writer_open(&w, path, err, sizeof err), 0, "%s", err);
    return w;
}

static void write_ok(gguf_writer *w, const void *p, size_t n)
{
    char err[256] = "";
    cr_assert_eq(gguf_writer_write(w, p, n, err, sizeof err), 0, "%s", err);
}

static gguf *open_ok(const char *path)
{
    char err[512] = "";
    gguf *g = NULL;
    cr_assert_eq(gguf_open(&g, path, err, sizeof err), 0, "%s", err);
    return g;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A small file of every value type and three tensors, written in pieces. */
static void write_sample(const char *path)
{
    gguf_writer *w = new_writer(path);
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    uint32_t u32 = 4000000000u;
    int32_t i32 = -2000000000;
    float f32 = 1.5f;
    uint8_t yes = 1;
    uint64_t u64 = 1ull << 40;
    int64_t i64 = -(1ll << 40);
    double f64 = 0.125;
    gguf_writer_set_val(w, "t.u8", GGUF_U8, &u8);
    gguf_writer_set_val(w, "t.i8", GGUF_I8, &i8);
    gguf_writer_set_val(w, "t.u16", GGUF_U16, &u16);
    gguf_writer_set_val(w, "t.i16", GGUF_I16, &i16);
    gguf_writer_set_val(w, "t.u32", GGUF_U32, &u32);
    gguf_writer_set_val(w, "t.i32", GGUF_I32, &i32);
    gguf_writer_set_val(w, "t.f32", GGUF_F32, &f32);
    gguf_writer_set_val(w, "t.bool", GGUF_BOOL, &yes);
    gguf_writer_set_val(w, "t.u64", GGUF_U64, &u64);
    gguf_writer_set_val(w, "t.i64", GGUF_I64, &i64);
    gguf_writer_set_val(w, "t.f64", GGUF_F64, &f64);
    gguf_writer_set_str(w, "t.str", "h\0llo", 5);
    const int32_t ints[3] = {-1, 0, 7};
    gguf_writer_set_arr(w, "t.arr_i32", GGUF_I32, ints, 3);
    gguf_writer_set_arr(w, "t.arr_empty", GGUF_F32, NULL, 0);
    const char *strs[] = {"a", "", "\xe2\x96\x81the"};
    gguf_writer_set_arr_str(w, "t.arr_str", strs, NULL, 3);
    gguf_writer_add_tensor(w, "v", WT_F32, 1, (uint64_t[]){3});
    gguf_writer_add_tensor(w, "m", WT_Q8_0, 2, (uint64_t[]){64, 2});
    gguf_writer_add_tensor(w, "h", WT_F16, 3, (uint64_t[]){5, 2, 3});
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    float v[3] = {1, 2, 3};
    write_ok(w, v, sizeof v);
    uint8_t q[4 * 34];
    for (size_t i = 0; i < sizeof q; i++)
        q[i] = (uint8_t)i;
    write_ok(w, q, 10); /* a tensor in pieces, and one write across two */
    write_ok(w, q + 10, sizeof q - 10);
    uint16_t h[30];
    for (int i = 0; i < 30; i++)
        h[i] = (uint16_t)(i * 1000);
    write_ok(w, h, sizeof h);
    cr_assert_eq(gguf_writer_commit(w, err, sizeof err), 0, "%s", err);
    gguf_writer_free(w);
}

Test(gguf_write, every_value_type_reads_back)
{
    const char *path = path_in("s.gguf");
    write_sample(path);
    gguf *g = open_ok(path);
    char err[256];
    uint64_t u;
    double f;
    int b;
    cr_assert_eq(gguf_version(g), 3);
    cr_assert(gguf_get_u64(g, "t.u8", &u, err, sizeof err) == 0 && u == 200);
    cr_assert(gguf_get_u64(g, "t.u16", &u, err, sizeof err) == 0 && u == 60000);
    cr_assert(gguf_get_u64(g, "t.u32", &u, err, sizeof err) == 0 && u == 4000000000u);
    cr_assert(gguf_get_u64(g, "t.u64", &u, err, sizeof err) == 0 && u == 1ull << 40);
    cr_assert(gguf_get_f64(g, "t.f32", &f, err, sizeof err) == 0 && f == 1.5);
    cr_assert(gguf_get_f64(g, "t.f64", &f, err, sizeof err) == 0 && f == 0.125);
    cr_assert(gguf_get_bool(g, "t.bool", &b, err, sizeof err) == 0 && b == 1);
    /* Negative integers: the u64 getter refuses them, arrays give them. */
    cr_assert_eq(gguf_get_u64(g, "t.i8", &u, err, sizeof err), -1);
    gguf_kv_raw kv;
    int64_t i64;
    cr_assert_eq(gguf_kv_at(g, 1, &kv), 0);
    cr_assert(kv.type == GGUF_I8 && ((const int8_t *)kv.value)[0] == -100);
    cr_assert_eq(gguf_kv_at(g, 3, &kv), 0);
    cr_assert(kv.type == GGUF_I16 && kv.value_bytes == 2);
    cr_assert_eq(gguf_kv_at(g, 9, &kv), 0);
    memcpy(&i64, kv.value, 8);
    cr_assert(kv.type == GGUF_I64 && i64 == -(1ll << 40));
    const char *s;
    size_t len;
    cr_assert_eq(gguf_get_str(g, "t.str", &s, &len, err, sizeof err), 0);
    cr_assert(len == 5 && memcmp(s, "h\0llo", 5) == 0);
    int et;
    uint64_t n;
    cr_assert(gguf_get_arr(g, "t.arr_i32", &et, &n, err, sizeof err) == 0 && et == GGUF_I32 &&
              n == 3);
    cr_assert(gguf_arr_i64(g, "t.arr_i32", 0, &i64) == 0 && i64 == -1);
    cr_assert(gguf_arr_i64(g, "t.arr_i32", 2, &i64) == 0 && i64 == 7);
    cr_assert(gguf_get_arr(g, "t.arr_empty", &et, &n, err, sizeof err) == 0 && n == 0);
    cr_assert(gguf_get_arr(g, "t.arr_str", &et, &n, err, sizeof err) == 0 && et == GGUF_STR &&
              n == 3);
    cr_assert(gguf_arr_str(g, "t.arr_str", 1, &s, &len) == 0 && len == 0);
    cr_assert(gguf_arr_str(g, "t.arr_str", 2, &s, &len) == 0 && len == 6 &&
              memcmp(s, "\xe2\x96\x81the", 6) == 0);
    cr_assert_eq(gguf_n_kv(g), 15);
    gguf_close(g);
    remove_dir("s.gguf");
}

/* The whole file in memory, for looking at its layout. */
static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    uint8_t *p = malloc(*size);
    cr_assert(p && fread(p, 1, *size, f) == *size);
    fclose(f);
    return p;
}

Test(gguf_write, tensors_laid_out_as_llama_cpp_pads_them)
{
    const char *path = path_in("s.gguf");
    write_sample(path);
    size_t size;
    uint8_t *bytes = slurp(path, &size);
    char err[512] = "";
    gguf *g;
    cr_assert_eq(gguf_open_mem(&g, bytes, size, "s.gguf", err, sizeof err), 0, "%s", err);
    cr_assert_eq(gguf_n_tensors(g), 3);
    const gguf_tensor *v = gguf_tensor_at(g, 0), *m = gguf_tensor_at(g, 1),
                      *h = gguf_tensor_at(g, 2);
    cr_assert_str_eq(v->name, "v");
    cr_assert(v->type == WT_F32 && v->n_dims == 1 && v->ne[0] == 3 && v->bytes == 12);
    cr_assert(m->type == WT_Q8_0 && m->n_dims == 2 && m->ne[0] == 64 && m->ne[1] == 2);
    cr_assert(h->type == WT_F16 && h->n_dims == 3 && h->ne[2] == 3 && h->bytes == 60);
    /* The data section and each tensor at a multiple of 32, padded with
     * zeros, the last tensor too: the file ends at its padding. */
    size_t data = (size_t)((const uint8_t *)v->data - bytes);
    cr_assert_eq(data % 32, 0);
    cr_assert_eq(v->offset, 0);
    cr_assert_eq(m->offset, 32);
    cr_assert_eq(h->offset, 32 + 160);
    cr_assert_eq(size, data + h->offset + 64);
    for (size_t i = 12; i < 32; i++)
        cr_assert_eq(bytes[data + i], 0);
    for (size_t i = 60; i < 64; i++)
        cr_assert_eq(bytes[data + h->offset + i], 0);
    cr_assert_eq(((const float *)v->data)[2], 3.0f);
    for (int i = 0; i < 4 * 34; i++)
        cr_assert_eq(((const uint8_t *)m->data)[i], (uint8_t)i);
    cr_assert_eq(((const uint16_t *)h->data)[29], 29000);
    gguf_close(g);
    free(bytes);
    remove_dir("s.gguf");
}

/* The key at position i of the file. */
static void key_at(const gguf *g, int64_t i, const char *key)
{
    gguf_kv_raw kv;
    cr_assert_eq(gguf_kv_at(g, i, &kv), 0);
    cr_assert(kv.key_len == strlen(key) && memcmp(kv.key, key, kv.key_len) == 0,
              "key %lld is '%.*s', expected '%s'", (long long)i, (int)kv.key_len, kv.key, key);
}

static void commit_ok(gguf_writer *w)
{
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gguf_writer_commit(w, err, sizeof err), 0, "%s", err);
    gguf_writer_free(w);
}

/* As llama.cpp's gguf_set_*: a key set again moves to the end. */
Test(gguf_write, a_key_set_again_moves_to_the_end)
{
    const char *path = path_in("k.gguf");
    gguf_writer *w = new_writer(path);
    uint32_t one = 1, two = 2;
    gguf_writer_set_val(w, "a", GGUF_U32, &one);
    gguf_writer_set_str(w, "b", "x", 1);
    gguf_writer_set_val(w, "a", GGUF_U32, &two);
    commit_ok(w);
    gguf *g = open_ok(path);
    cr_assert_eq(gguf_n_kv(g), 2);
    key_at(g, 0, "b");
    key_at(g, 1, "a");
    uint64_t a;
    cr_assert(gguf_get_u64(g, "a", &a, NULL, 0) == 0 && a == 2);
    gguf_close(g);
    remove_dir("k.gguf");
}

Test(gguf_write, general_alignment_sets_the_layout)
{
    const char *path = path_in("a.gguf");
    gguf_writer *w = new_writer(path);
    uint32_t align = 64;
    gguf_writer_set_val(w, "general.alignment", GGUF_U32, &align);
    gguf_writer_add_tensor(w, "x", WT_F32, 1, (uint64_t[]){3});
    gguf_writer_add_tensor(w, "y", WT_F32, 1, (uint64_t[]){3});
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    float v[6] = {0};
    write_ok(w, v, sizeof v);
    cr_assert_eq(gguf_writer_commit(w, err, sizeof err), 0, "%s", err);
    gguf_writer_free(w);
    size_t size;
    uint8_t *bytes = slurp(path, &size);
    gguf *g;
    cr_assert_eq(gguf_open_mem(&g, bytes, size, "a.gguf", err, sizeof err), 0, "%s", err);
    cr_assert_eq(gguf_tensor_at(g, 1)->offset, 64);
    cr_assert_eq(((const uint8_t *)gguf_tensor_at(g, 0)->data - bytes) % 64, 0);
    cr_assert_eq(size, (size_t)((const uint8_t *)gguf_tensor_at(g, 1)->data - bytes) + 64);
    gguf_close(g);
    free(bytes);
    remove_dir("a.gguf");
}

/* A describing call that fails is reported by begin, naming the file and
 * the problem, and nothing is created. */
static void refused_at_begin(gguf_writer *w, const char *part)
{
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), -1, "began, expected '%s'", part);
    cr_assert(strstr(err, dir) && strstr(err, part), "message '%s' lacks the file or '%s'", err,
              part);
    gguf_writer_free(w);
    remove_dir(NULL);
}

Test(gguf_write, alignment_not_a_power_of_two)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    uint32_t align = 48;
    cr_assert_eq(gguf_writer_set_val(w, "general.alignment", GGUF_U32, &align), -1);
    refused_at_begin(w, "'general.alignment' is 48, expected a power of two");
}

Test(gguf_write, alignment_of_another_type)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    uint64_t align = 32;
    gguf_writer_set_val(w, "general.alignment", GGUF_U64, &align);
    refused_at_begin(w, "'general.alignment' must be a u32, got u64");
}

Test(gguf_write, row_not_a_whole_block)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    cr_assert_eq(gguf_writer_add_tensor(w, "w", WT_Q4_K, 2, (uint64_t[]){172, 4}), -1);
    refused_at_begin(w, "tensor 'w': rows of 172 values are not a multiple of Q4_K's block of 256");
}

Test(gguf_write, first_error_is_kept)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    gguf_writer_add_tensor(w, "w", WT_F32, 1, (uint64_t[]){4});
    cr_assert_eq(gguf_writer_add_tensor(w, "w", WT_F32, 1, (uint64_t[]){4}), -1);
    cr_assert_eq(gguf_writer_add_tensor(w, "z", 99, 1, (uint64_t[]){4}), -1);
    refused_at_begin(w, "tensor 'w' added twice");
}

Test(gguf_write, unsupported_tensor_type)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    gguf_writer_add_tensor(w, "w", 10, 1, (uint64_t[]){256});
    refused_at_begin(w, "type Q2_K (10) cannot be written");
}

Test(gguf_write, bad_shapes)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    gguf_writer_add_tensor(w, "w", WT_F32, 5, (uint64_t[]){1, 1, 1, 1, 1});
    refused_at_begin(w, "5 dimensions, expected 1 to 4");
    make_dir();
    w = new_writer(path_in("x.gguf"));
    gguf_writer_add_tensor(w, "w", WT_F32, 2, (uint64_t[]){4, 0});
    refused_at_begin(w, "dimension 1 is 0");
    make_dir();
    w = new_writer(path_in("x.gguf"));
    gguf_writer_add_tensor(w, "w", WT_F32, 2, (uint64_t[]){1ull << 40, 1ull << 40});
    refused_at_begin(w, "its size overflows");
}

Test(gguf_write, tensor_name_too_long)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    char name[80];
    memset(name, 'n', 64);
    name[64] = '\0';
    gguf_writer_add_tensor(w, name, WT_F32, 1, (uint64_t[]){4});
    refused_at_begin(w, "must be 1 to 63 bytes");
}

Test(gguf_write, not_a_value_type)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    gguf_writer_set_val(w, "k", GGUF_STR, "x");
    refused_at_begin(w, "key 'k': type 8 is not a fixed-size value type");
}

Test(gguf_write, empty_key)
{
    gguf_writer *w = new_writer(path_in("x.gguf"));
    gguf_writer_set_str(w, "", "x", 1);
    refused_at_begin(w, "a key must be 1 to 65535 bytes");
}

/* A writer freed before commit leaves no file, temporary or final. */
Test(gguf_write, incomplete_data_leaves_nothing)
{
    const char *path = path_in("i.gguf");
    gguf_writer *w = new_writer(path);
    gguf_writer_add_tensor(w, "a", WT_F32, 1, (uint64_t[]){8});
    gguf_writer_add_tensor(w, "b", WT_F32, 1, (uint64_t[]){8});
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    float v[12] = {0};
    write_ok(w, v, sizeof v);
    cr_assert_eq(gguf_writer_commit(w, err, sizeof err), -1);
    cr_assert(strstr(err, "tensor 'b' has 16 of its 32 bytes"), "%s", err);
    cr_assert(!exists(path));
    gguf_writer_free(w);
    remove_dir(NULL);
}

Test(gguf_write, data_past_the_last_tensor)
{
    gguf_writer *w = new_writer(path_in("p.gguf"));
    gguf_writer_add_tensor(w, "a", WT_F32, 1, (uint64_t[]){2});
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    float v[3] = {0};
    cr_assert_eq(gguf_writer_write(w, v, sizeof v, err, sizeof err), -1);
    cr_assert(strstr(err, "4 bytes of tensor data past the last tensor"), "%s", err);
    gguf_writer_free(w);
    remove_dir(NULL);
}

/* Until commit, an existing file at the destination stays as it was. */
Test(gguf_write, destination_untouched_until_commit)
{
    const char *path = path_in("d.gguf");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("old", f);
    fclose(f);
    gguf_writer *w = new_writer(path);
    gguf_writer_add_tensor(w, "a", WT_F32, 1, (uint64_t[]){2});
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    float v[2] = {1, 2};
    write_ok(w, v, sizeof v);
    size_t size;
    uint8_t *old = slurp(path, &size);
    cr_assert(size == 3 && memcmp(old, "old", 3) == 0);
    free(old);
    gguf_writer_free(w);
    old = slurp(path, &size);
    cr_assert(size == 3 && memcmp(old, "old", 3) == 0);
    free(old);
    remove_dir("d.gguf");
}

Test(gguf_write, unwritable_directory)
{
    char path[128];
    snprintf(path, sizeof path, "%s/missing/x.gguf", dir);
    gguf_writer *w = new_writer(path);
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), -1);
    cr_assert(strstr(err, path) && strstr(err, "cannot create a file in its directory") &&
                  strstr(err, "No such file or directory"),
              "%s", err);
    gguf_writer_free(w);
    remove_dir(NULL);
}

/* The destination is a directory: the rename fails, the temporary file goes. */
Test(gguf_write, destination_is_a_directory)
{
    const char *path = path_in("sub");
    cr_assert_eq(mkdir(path, 0700), 0);
    gguf_writer *w = new_writer(path);
    char err[256] = "";
    cr_assert_eq(gguf_writer_begin(w, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gguf_writer_commit(w, err, sizeof err), -1);
    cr_assert(strstr(err, "rename"), "%s", err);
    gguf_writer_free(w);
    rmdir(path);
    remove_dir(NULL);
}

/* Every key of a llama.cpp file copied, in order, byte for byte. */
Test(gguf_write, copied_metadata_is_identical)
{
    gguf *src = open_ok(FIX "r256-Q4_K_M.gguf");
    const char *path = path_in("c.gguf");
    gguf_writer *w = new_writer(path);
    for (int64_t i = 0; i < gguf_n_kv(src); i++) {
        gguf_kv_raw kv;
        cr_assert_eq(gguf_kv_at(src, i, &kv), 0);
        cr_assert_eq(gguf_writer_copy_kv(w, &kv), 0);
    }
    commit_ok(w);
    gguf *g = open_ok(path);
    cr_assert_eq(gguf_n_kv(g), gguf_n_kv(src));
    for (int64_t i = 0; i < gguf_n_kv(src); i++) {
        gguf_kv_raw a, b;
        gguf_kv_at(src, i, &a);
        gguf_kv_at(g, i, &b);
        cr_assert(a.key_len == b.key_len && memcmp(a.key, b.key, a.key_len) == 0);
        cr_assert(a.type == b.type && a.value_bytes == b.value_bytes &&
                      memcmp(a.value, b.value, a.value_bytes) == 0,
                  "key '%.*s' differs", (int)a.key_len, a.key);
    }
    cr_assert_eq(gguf_kv_at(g, gguf_n_kv(g), &(gguf_kv_raw){0}), -1);
    gguf_close(g);
    gguf_close(src);
    remove_dir("c.gguf");
}
