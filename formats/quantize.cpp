// placeholder: filled by the quantize work
