/* The default model, stories260K and its tokenizer, linked into inferd so
 * that `inferd generate` works with no files beside the binary (and on a
 * remote node started over SSH). See engine/model/embedded/README.md. */
        .section .rodata
        .balign 64
        .globl  embedded_model_start, embedded_model_end
        .globl  embedded_tokenizer_start, embedded_tokenizer_end
embedded_model_start:
        .incbin "stories260K.bin"
embedded_model_end:
        .balign 64
embedded_tokenizer_start:
        .incbin "tok512.bin"
embedded_tokenizer_end:
        .section .note.GNU-stack,"",@progbits
