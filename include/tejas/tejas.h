// Tejas: the kernel layer of LLM serving. One include for the whole public API.
#pragma once
#include "tejas/activation.h"
#include "tejas/attention.h"
#include "tejas/context.h"
#include "tejas/dtype.h"
#include "tejas/norm.h"
#include "tejas/quant.h"
#include "tejas/rope.h"
#include "tejas/status.h"
#include "tejas/tensor.h"
#include "tejas/version.h"
