/* cli_table.c: aligned text tables for the headless CLI. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/sys/utf8.h"

struct cli_table {
    int ncol;
    char **headers;
    size_t *width;
    int *text;    /* column has a cell that is not a number: left-align */
    char **cells; /* buffered rows, ncol cells each */
    size_t nrows, cap;
};

/* Display width of UTF-8 text: its characters. */
static size_t text_width(const char *s)
{
    return utf8_count(s, strlen(s));
}

static int is_number(const char *s)
{
    if (!*s || strcmp(s, "-") == 0)
        return 1; /* missing values do not make a column textual */
    char *end;
    strtod(s, &end);
    return *end == '\0' || (end[0] == '%' && end[1] == '\0');
}

cli_table *cli_table_new(int ncol, const char *const *headers)
{
    cli_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncol = ncol;
    t->headers = calloc(ncol, sizeof *t->headers);
    t->width = calloc(ncol, sizeof *t->width);
    t->text = calloc(ncol, sizeof *t->text);
    if (!t->headers || !t->width || !t->text) {
        cli_table_free(t);
        return NULL;
    }
    for (int i = 0; i < ncol; i++) {
        if (!(t->headers[i] = strdup(headers[i]))) {
            cli_table_free(t);
            return NULL;
        }
        t->width[i] = text_width(headers[i]);
    }
    return t;
}

void cli_table_free(cli_table *t)
{
    if (!t)
        return;
    for (int i = 0; t->headers && i < t->ncol; i++)
        free(t->headers[i]);
    for (size_t i = 0; i < t->nrows * (size_t)t->ncol; i++)
        free(t->cells[i]);
    free(t->headers);
    free(t->width);
    free(t->text);
    free(t->cells);
    free(t);
}

void cli_table_measure(cli_table *t, const char *const *cells)
{
    for (int i = 0; i < t->ncol; i++) {
        const char *c = cells[i] ? cells[i] : "-";
        size_t w = text_width(c);
        if (w > t->width[i])
            t->width[i] = w;
        if (!is_number(c))
            t->text[i] = 1;
    }
}

int cli_table_add(cli_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        size_t ncap = t->cap ? 2 * t->cap : 16;
        char **grown = realloc(t->cells, ncap * t->ncol * sizeof *grown);
        if (!grown)
            return -1;
        t->cells = grown;
        t->cap = ncap;
    }
    char **row = &t->cells[t->nrows * t->ncol];
    for (int i = 0; i < t->ncol; i++) {
        if (!(row[i] = strdup(cells[i] ? cells[i] : "-"))) {
            while (i--)
                free(row[i]);
            return -1;
        }
    }
    t->nrows++;
    cli_table_measure(t, (const char *const *)row);
    return 0;
}

/* Two spaces between columns, none after the last. */
static void print_cells(const cli_table *t, const char *const *cells, int header, FILE *out)
{
    for (int i = 0; i < t->ncol; i++) {
        const char *c = cells[i] ? cells[i] : "-";
        size_t pad = t->width[i] - text_width(c);
        int right = !t->text[i] && !header;
        int last = i == t->ncol - 1;
        if (i)
            fputs("  ", out);
        if (right || (header && !t->text[i]))
            fprintf(out, "%*s%s", (int)pad, "", c);
        else
            fprintf(out, "%s%*s", c, last ? 0 : (int)pad, "");
    }
    fputc('\n', out);
}

void cli_table_print_header(const cli_table *t, FILE *out)
{
    print_cells(t, (const char *const *)t->headers, 1, out);
}

void cli_table_print_row(const cli_table *t, const char *const *cells, FILE *out)
{
    print_cells(t, cells, 0, out);
}

void cli_table_print(const cli_table *t, FILE *out)
{
    cli_table_print_header(t, out);
    for (size_t r = 0; r < t->nrows; r++)
        cli_table_print_row(t, (const char *const *)&t->cells[r * t->ncol], out);
}
