module heaptext

go 1.19
