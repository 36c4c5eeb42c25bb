// placeholder: filled by the bulk work
