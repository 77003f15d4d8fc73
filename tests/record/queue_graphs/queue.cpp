#include <torch/custom_class.h>
#include <torch/library.h>
#include <torch/torch.h>

struct Queue : torch::CustomClassHolder {
  std::vector<at::Tensor> items;
  void push(at::Tensor x) { items.push_back(x); }
  int64_t size() { return items.size(); }
  void for_each_add_(at::Tensor inc) {
    for (auto& x : items) x.add_(inc);
  }
  std::tuple<std::tuple<std::string, std::vector<at::Tensor>>> __obj_flatten__() {
    return std::tuple(std::tuple(std::string("queue"), items));
  }
};

void for_each_add(c10::intrusive_ptr<Queue> q, at::Tensor inc) { q->for_each_add_(inc); }

TORCH_LIBRARY(mylib, m) {
  m.class_<Queue>("Queue")
      .def(torch::init<>())
      .def("push", &Queue::push)
      .def("size", &Queue::size)
      .def("for_each_add_", &Queue::for_each_add_)
      .def("__obj_flatten__", &Queue::__obj_flatten__)
      .def_pickle(
          [](const c10::intrusive_ptr<Queue>& q) -> std::vector<at::Tensor> { return q->items; },
          [](std::vector<at::Tensor> items) -> c10::intrusive_ptr<Queue> {
            auto q = c10::make_intrusive<Queue>();
            q->items = std::move(items);
            return q;
          });
  m.def("for_each_add(__torch__.torch.classes.mylib.Queue q, Tensor inc) -> ()");
}

TORCH_LIBRARY_IMPL(mylib, CPU, m) { m.impl("for_each_add", for_each_add); }
